/**
 * Draining a host: new sandboxes stop going there (placement skips a
 * draining host), and its persistent sandboxes move to other hosts (a
 * hibernated one is restored from its image in the store, or woken where it
 * is when it has none, and hibernated again where it lands). A move
 * is a snapshot into the shared snapshot store (S3), then the restore of it
 * on another host under the same id: memory, processes and files go along;
 * the sandbox does not answer in between, and an exec that was running on
 * the old host ends there. Sandboxes that are not persistent stay until they
 * end (TTL, delete), as do persistent ones with volumes (their volume is on
 * the host) and every sandbox when snapshots are not shared.
 */
import { newId } from '@warren/protocol';
import { movesBetweenHosts } from '../sandboxes/lifecycle';
import type { SandboxRecord } from '../store/store';
import { placedText, restoreRequest, type Recovery } from './recovery';

const movable = (r: Recovery, s: SandboxRecord) =>
  r.sharedSnapshots &&
  movesBetweenHosts(s) &&
  (s.state === 'running' || s.state === 'paused' || s.state === 'hibernated');

async function move(r: Recovery, id: string, from: string): Promise<boolean> {
  return r.lifecycle.locked(id, async () => {
    const sbx = await r.store.getSandboxById(id);
    if (!sbx || sbx.host_id !== from || !movable(r, sbx)) return false;
    const old = r.router.host(from);
    const asleep = sbx.state === 'hibernated';
    // A hibernated one with its image in the store goes from there; any other
    // is captured into the store first (a hibernated one woken for that).
    const image = asleep ? sbx.image_id : null;
    if (!image && sbx.state === 'paused') await old.sandboxes.resume(id);
    if (!image && asleep) await old.sandboxes.wake(id, { env: sbx.env, network: sbx.network });
    const source = image ?? newId('snapshot');
    if (!image) await old.sandboxes.snapshot(id, source);
    try {
      const placement = await r.place({ template: sbx.template, memoryMb: sbx.memory_mb });
      await old.sandboxes.destroy(id);
      // The old image goes (finally, below): a new one is made where it lands.
      await r.store.updateSandbox(id, { host_id: placement.hostId, image_id: null });
      const to = r.router.host(placement.hostId).sandboxes;
      try {
        await to.create(restoreRequest(sbx, sbx.template, source));
      } catch (err) {
        await r.lifecycle.lost(id, `moving off host ${from} failed: ${(err as Error).message}`);
        return false;
      }
      // Asleep again where it lands; if that fails it is at least running there.
      const slept =
        asleep &&
        (await r.lifecycle.hibernateOn(to, { ...sbx, image_id: null }).then(
          () => true,
          () => false,
        ));
      const state = slept ? 'hibernated' : 'running';
      await r.store.setState(
        id,
        state,
        `moved from host ${from} (drained); ${placedText(placement)}`,
      );
      return true;
    } finally {
      await r.router.snapshots.delete(source).catch(() => undefined);
    }
  });
}

/** Moves the host's persistent sandboxes off it; returns how many moved. */
export async function moveOff(r: Recovery, hostId: string): Promise<{ moved: number }> {
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
  return { moved };
}
