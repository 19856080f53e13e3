/**
 * Snapshots and forks: captures of running sandboxes (memory, processes and
 * files; the sandbox goes on running), new sandboxes from them, fork-trees
 * of several children from one capture, and disk-only forks.
 */
import {
  WarrenError,
  newId,
  type ForkRequest,
  type ForkTreeRequest,
  type HostApi,
  type Sandbox,
  type Snapshot,
} from '@warren/protocol';
import type { QuotaService } from '../quotas/service';
import type { SnapshotRecord, Store } from '../store/store';
import { isoIn } from './clock';
import { inherit, type SandboxCreator } from './create';
import type { SandboxLifecycle } from './lifecycle';
import { snapshotView } from './view';

export class SnapshotService {
  /** Set by the platform: snapshots are refused once the organisation's snapshot storage is full. */
  quotas: QuotaService | null = null;

  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
    private readonly lifecycle: SandboxLifecycle,
    private readonly creator: SandboxCreator,
  ) {}

  async list(orgId: string): Promise<Snapshot[]> {
    return (await this.store.listSnapshots(orgId)).map(snapshotView);
  }

  async record(orgId: string, id: string): Promise<SnapshotRecord> {
    const snap = await this.store.getSnapshot(orgId, id);
    if (!snap) throw new WarrenError('SNAPSHOT_NOT_FOUND', `snapshot ${id} does not exist`);
    return snap;
  }

  async get(orgId: string, id: string): Promise<Snapshot> {
    return snapshotView(await this.record(orgId, id));
  }

  async delete(orgId: string, id: string): Promise<void> {
    await this.record(orgId, id);
    await this.store.deleteSnapshot(id);
    // Restored sandboxes hold no reference to the image: it is read whole at restore.
    // Its files go once no other snapshot shares them.
    await this.host.snapshots.delete(id);
  }

  /**
   * A capture of a sandbox with volumes is refused: its files there are not in
   * the image, and a fork must not share a writable volume.
   */
  private async refuseVolumes(orgId: string, id: string, what: string): Promise<void> {
    const names = (await this.lifecycle.row(orgId, id)).volumes.map((v) => v.name);
    if (names.length > 0)
      throw new WarrenError(
        'SANDBOX_HAS_VOLUMES',
        `cannot ${what} sandbox ${id}: it has volumes attached (${names.join(', ')})`,
        { volumes: names },
      );
  }

  /** Captures memory, processes and files of a running sandbox; it goes on running. */
  async snapshot(orgId: string, id: string): Promise<Snapshot> {
    await this.refuseVolumes(orgId, id, 'snapshot');
    await this.quotas?.checkSnapshot(orgId);
    const row = await this.lifecycle.use(orgId, id); // wakes a paused or hibernated sandbox first
    const snapId = newId('snapshot');
    return this.lifecycle.locked(id, async () => {
      const { size_bytes, paused_ms } = await this.host.sandboxes.snapshot(id, snapId);
      const snap: SnapshotRecord = {
        id: snapId,
        org_id: orgId,
        host_id: row.host_id,
        sandbox_id: id,
        template: row.template,
        cpu: row.cpu,
        memory_mb: row.memory_mb,
        env: row.env,
        lineage: row.lineage, // the sandbox's ancestors; children add the sandbox itself
        size_bytes,
        parent_pause_ms: paused_ms,
        created_at: isoIn(this.lifecycle.clock),
        network: row.network,
        disk_mb: row.disk_mb,
      };
      try {
        await this.store.insertSnapshot(snap);
      } catch (err) {
        await this.host.snapshots.delete(snapId);
        throw err;
      }
      return snapshotView(snap);
    });
  }

  /**
   * Children of a running sandbox from one capture of it, all restored at
   * once. All or none: if one child fails, the others are destroyed. On one
   * host the capture stays there and memory is checked for all children
   * first; with several hosts sharing the snapshot store (S3) it goes into
   * the store and placement puts each child on any host (each is admitted
   * where it lands).
   */
  async forkTree(
    orgId: string,
    id: string,
    req: ForkTreeRequest,
  ): Promise<{ parent_id: string; parent_pause_ms: number; children: Sandbox[] }> {
    await this.refuseVolumes(orgId, id, 'fork');
    const parent = await this.lifecycle.use(orgId, id);
    const spread = this.creator.spreads();
    if (!spread) await this.checkRoom(parent.memory_mb, req.count);
    const image = await this.lifecycle.locked(id, () => this.captureForChildren(id, spread));
    try {
      const launched = await Promise.allSettled(
        Array.from({ length: req.count }, () =>
          this.creator.launch(orgId, {
            ...inherit(parent, req),
            forkKind: 'memory',
            source: image.source,
            cause: `forked from ${id}`,
          }),
        ),
      );
      const children = launched.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const failed = launched.find((r) => r.status === 'rejected');
      if (failed) {
        for (const c of children)
          await this.lifecycle.destroy(orgId, c.id, 'fork-tree failed').catch(() => undefined);
        throw failed.reason;
      }
      return { parent_id: id, parent_pause_ms: image.pausedMs, children };
    } finally {
      await image.release();
    }
  }

  /** The children's memory_mb against the overcommit cap; each child is admitted on use as well. */
  private async checkRoom(memoryMb: number, count: number): Promise<void> {
    const cap = await this.host.capacity();
    const need = memoryMb * count;
    const free =
      Math.floor(cap.memory_budget_mb * (cap.memory_overcommit ?? 1)) - cap.memory_reserved_mb;
    if (need > free) {
      throw new WarrenError(
        'INSUFFICIENT_CAPACITY',
        `${count} children of ${memoryMb} MiB need ${need} MiB; ${free} MiB free`,
        { requested_mb: need, free_mb: free },
      );
    }
  }

  /** A capture kept on the parent's host, or (spread) an image in the shared snapshot store. */
  private async captureForChildren(id: string, spread: boolean) {
    if (spread) {
      const snapshotId = newId('snapshot');
      const { paused_ms } = await this.host.sandboxes.snapshot(id, snapshotId);
      return {
        source: { kind: 'snapshot', snapshot_id: snapshotId } as const,
        pausedMs: paused_ms,
        release: () => this.host.snapshots.delete(snapshotId),
      };
    }
    const { capture_id, paused_ms } = await this.host.sandboxes.capture(id);
    return {
      source: { kind: 'capture', capture_id } as const,
      pausedMs: paused_ms,
      release: () => this.host.sandboxes.releaseCapture(capture_id),
    };
  }

  /**
   * A new sandbox with a copy of the parent's files, started fresh. It is
   * restored from a capture of the parent (the quickest consistent copy of
   * its files) and then every process the capture brought along is stopped
   * before anyone can use it: the child runs none of the parent's programs
   * and holds none of their memory.
   */
  async fork(orgId: string, id: string, req: ForkRequest): Promise<Sandbox> {
    await this.refuseVolumes(orgId, id, 'fork');
    const parent = await this.lifecycle.use(orgId, id);
    const capture = await this.lifecycle.locked(id, () => this.host.sandboxes.capture(id));
    try {
      return await this.creator.launch(orgId, {
        ...inherit(parent, req),
        forkKind: 'disk',
        source: { kind: 'capture', capture_id: capture.capture_id },
        reset: true,
        cause: `disk fork of ${id}`,
      });
    } finally {
      await this.host.sandboxes.releaseCapture(capture.capture_id);
    }
  }
}
