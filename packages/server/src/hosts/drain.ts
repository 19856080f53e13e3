/**
 * Draining a host: new sandboxes stop going there (placement skips a
 * draining host), and its persistent sandboxes move to other hosts (a
 * hibernated one is woken there, moved, and hibernated again). A move
 * is a snapshot into the shared snapshot store (S3), then the restore of it
 * on another host under the same id: memory, processes and files go along;
 * the sandbox does not answer in between, and an exec that was running on
 * the old host ends there. Sandboxes that are not persistent stay until they
 * end (TTL, delete), as do persistent ones with volumes (their volume is on
 * the host) and every sandbox when snapshots are not shared.
 */
import { newId } from '@warren/protocol';
import type { SandboxRecord } from '../store/store';
import { LIVE_STATES, placedText, restoreRequest, type Recovery } from './recovery';

const movable = (r: Recovery, s: SandboxRecord) =>
  r.sharedSnapshots &&
  s.persistent === 1 &&
  s.volumes.length === 0 &&
  !('warren.database' in s.metadata) &&
  (s.state === 'running' || s.state === 'paused' || s.state === 'hibernated');

async function move(r: Recovery, id: string, from: string): Promise<boolean> {
  return r.lifecycle.locked(id, async () => {
    const sbx = await r.store.getSandboxById(id);
    if (!sbx || sbx.host_id !== from || !movable(r, sbx)) return false;
    const old = r.router.host(from);
    if (sbx.state === 'paused') await old.sandboxes.resume(id);
    // A hibernated one is woken where its image is, moved, and put to sleep again there.
    if (sbx.state === 'hibernated')
      await old.sandboxes.wake(id, { env: sbx.env, network: sbx.network });
    const snapshotId = newId('snapshot');
    await old.sandboxes.snapshot(id, snapshotId);
    try {
      const placement = await r.place({ template: sbx.template, memoryMb: sbx.memory_mb });
      const req = restoreRequest(sbx, sbx.template, snapshotId);
      await old.sandboxes.destroy(id);
      await r.store.updateSandbox(id, { host_id: placement.hostId });
      try {
        await r.router.host(placement.hostId).sandboxes.create(req);
      } catch (err) {
        await r.lifecycle.lost(id, `moving off host ${from} failed: ${(err as Error).message}`);
        return false;
      }
      const asleep = sbx.state === 'hibernated';
      if (asleep) await r.router.host(placement.hostId).sandboxes.hibernate(id);
      const to = asleep ? 'hibernated' : 'running';
      await r.store.setState(id, to, `moved from host ${from} (drained); ${placedText(placement)}`);
      return true;
    } finally {
      await r.router.snapshots.delete(snapshotId).catch(() => undefined);
    }
  });
}

/** Moves the host's persistent sandboxes off it; returns how many moved and how many stay. */
export async function moveOff(
  r: Recovery,
  hostId: string,
): Promise<{ moved: number; stay: number }> {
  const rows = await r.store.sandboxesOnHost(hostId, ['running', 'paused', 'hibernated']);
  let moved = 0;
  for (const row of rows) {
    if (!movable(r, row)) continue;
    const ok = await move(r, row.id, hostId).catch((err: Error) => {
      r.log.warn(
        { sandbox: row.id, host: hostId, err: err.message },
        'move off a drained host failed',
      );
      return false;
    });
    if (ok) moved++;
  }
  const stay = (await r.store.sandboxesOnHost(hostId, [...LIVE_STATES])).length;
  return { moved, stay };
}
