/**
 * What happens to a lost host's sandboxes. With a snapshot store every host
 * shares (S3), a persistent sandbox is restored onto another host, under its
 * own id: a hibernated one from its hibernation image (as it went to sleep;
 * it wakes there), any other from its latest snapshot (its files, memory and
 * processes as of that snapshot, what it did since is gone). Every other
 * sandbox of the host (and one whose restore fails) is recorded stopped,
 * with the reason. Each outcome is a state change in the sandbox's events.
 */
import type { HostCreateRequest } from '@warren/protocol';
import { movesBetweenHosts, type SandboxLifecycle } from '../sandboxes/lifecycle';
import { decodeSnapshot } from '../store/records';
import type { SandboxRecord, Store } from '../store/store';
import type { Placement, PlacementRequest } from './placement';
import type { HostRouter } from './router';

export interface Recovery {
  store: Store;
  router: HostRouter;
  lifecycle: SandboxLifecycle;
  place(req: PlacementRequest): Promise<Placement>;
  /** Snapshots are in a store every host reads (S3). */
  sharedSnapshots: boolean;
  log: { warn(o: object, m: string): void; info(o: object, m: string): void };
}

/** Every state but stopped: what a host owns. */
export const LIVE_STATES = ['creating', 'running', 'paused', 'stopping', 'hibernated'] as const;

/** The restore of a snapshot of `sbx` on another host, under its id and with its sizes. */
export function restoreRequest(
  sbx: SandboxRecord,
  template: string,
  snapshotId: string,
): HostCreateRequest {
  return {
    id: sbx.id,
    template,
    from: { kind: 'snapshot', snapshot_id: snapshotId },
    cpu: sbx.cpu,
    memory_mb: sbx.memory_mb,
    disk_mb: sbx.disk_mb ?? undefined,
    env: sbx.env,
    network: sbx.network,
  };
}

/** A placement as a sandbox's event tells it (with one host, placement gives no reason). */
export const placedText = (p: Placement) => p.reason || `placed on ${p.hostId}`;

async function latestSnapshot(store: Store, sandboxId: string) {
  const row = await store.db
    .selectFrom('snapshots')
    .selectAll()
    .where('sandbox_id', '=', sandboxId)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? decodeSnapshot(row) : undefined;
}

/** What a lost sandbox is restored from: its hibernation image, else its latest snapshot. */
async function sourceOf(store: Store, sbx: SandboxRecord) {
  if (sbx.state === 'hibernated' && sbx.image_id)
    return { id: sbx.image_id, template: sbx.template, text: 'woken from its hibernation image' };
  const snap = await latestSnapshot(store, sbx.id);
  if (!snap) return null;
  const text = `restored from snapshot ${snap.id} (${snap.created_at})`;
  return { id: snap.id, template: snap.template, text };
}

/** Restores one persistent sandbox elsewhere; returns the cause it records, or null if it cannot. */
async function restoreElsewhere(
  r: Recovery,
  sbx: SandboxRecord,
  why: string,
): Promise<string | null> {
  if (!r.sharedSnapshots || !movesBetweenHosts(sbx)) return null;
  const source = await sourceOf(r.store, sbx);
  if (!source) return null;
  const placement = await r.place({ template: source.template, memoryMb: sbx.memory_mb });
  const req = restoreRequest(sbx, source.template, source.id);
  await r.store.updateSandbox(sbx.id, { host_id: placement.hostId });
  try {
    await r.router.host(placement.hostId).sandboxes.create(req);
  } catch (err) {
    await r.store.updateSandbox(sbx.id, { host_id: sbx.host_id });
    throw err;
  }
  await r.lifecycle.dropImage(sbx);
  return `${source.text}: ${why}; ${placedText(placement)}`;
}

export async function recoverLostHost(r: Recovery, hostId: string, why: string): Promise<void> {
  const rows = await r.store.sandboxesOnHost(hostId, [...LIVE_STATES]);
  for (const sbx of rows) {
    await r.lifecycle.locked(sbx.id, async () => {
      const cause = await restoreElsewhere(r, sbx, why).catch((err: Error) => {
        r.log.warn({ sandbox: sbx.id, err: err.message }, 'restore elsewhere failed');
        return null;
      });
      if (cause) {
        await r.store.setState(sbx.id, 'running', cause);
        r.log.info({ sandbox: sbx.id, cause }, 'sandbox restored elsewhere');
      } else await r.lifecycle.lost(sbx.id, why);
    });
  }
}
