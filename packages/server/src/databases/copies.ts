/**
 * New databases made from existing ones: a point-in-time restore from the
 * archive, and a branch (a copy of the data as of now, taken from the live
 * volume without stopping the parent). Each gets its own id, password,
 * volume, sandbox and archive.
 */
import {
  WarrenError,
  type BranchDatabaseRequest,
  type Database,
  type RestoreDatabaseRequest,
} from '@warren/protocol';
import type { DatabaseRecord } from '../store/databases';
import { flushWal } from './move';
import { restoreFromArchive } from './restore';
import type { DatabaseService } from './service';

export class DatabaseCopies {
  constructor(private readonly dbs: DatabaseService) {}

  private like(parent: DatabaseRecord, label: string) {
    return this.dbs.newRecord(parent.org_id, {
      label,
      disk_mb: parent.disk_mb,
      scale_to_zero_seconds: parent.scale_to_zero_seconds,
      archive_timeout_seconds: parent.archive_timeout_seconds,
      metadata: parent.metadata,
      parent_id: parent.id,
    });
  }

  /**
   * A new database at `target_time` (or at the last archived WAL). The source
   * may be running: its current WAL is switched and archived first, so
   * "latest" means up to now.
   */
  async restore(orgId: string, id: string, req: RestoreDatabaseRequest): Promise<Database> {
    const h = this.dbs.host;
    const source = await this.dbs.row(orgId, id);
    if (req.target_time !== undefined && Date.parse(req.target_time) > Date.now())
      throw new WarrenError(
        'INVALID_RESTORE_TARGET',
        `target_time ${req.target_time} is in the future`,
      );
    if (source.state === 'ready') await flushWal(this.dbs, source);
    const rec = this.like(source, req.label ?? `${source.label} (restored)`);
    rec.restored_to = req.target_time ?? null;
    return this.dbs.build(
      rec,
      `restored from ${source.id} to ${req.target_time ?? 'latest'}`,
      async () => {
        const into = {
          orgId,
          dbId: rec.id,
          password: rec.password,
          archiveTimeoutSeconds: rec.archive_timeout_seconds,
          diskMb: rec.disk_mb,
          size: { cpu: source.cpu, memoryMb: source.memory_mb },
        };
        const restore = (target: string | undefined) =>
          restoreFromArchive(h, this.dbs.queries, this.dbs.provisioner, source, target, into);
        const made = await restore(req.target_time).catch((err: Error) => {
          // No commit after the target in the archive: the end of the archive is
          // the state at the target (it was flushed up to now above).
          if (req.target_time && /before configured recovery target was reached/.test(err.message))
            return restore(undefined);
          throw err;
        });
        rec.sandbox_id = made.sandboxId;
        rec.volume_id = made.volumeId;
        return {
          sandbox_id: made.sandboxId,
          volume_id: made.volumeId,
          cpu: made.cpu,
          memory_mb: made.memory_mb,
        };
      },
    );
  }

  /**
   * A branch: the parent checkpointed (so the copy's crash recovery replays
   * only what is written after it, not everything since the last scheduled
   * checkpoint), its volume copied as of one instant (writes in the parent
   * wait while the image is cloned), started as a server of its own after
   * crash recovery, with a new password.
   */
  async branch(orgId: string, id: string, req: BranchDatabaseRequest): Promise<Database> {
    const parent = await this.dbs.ready(orgId, id);
    const rec = this.like(parent, req.label ?? `${parent.label} (branch)`);
    return this.dbs.build(rec, `branched from ${parent.id}`, async () => {
      const p = this.dbs.provisioner;
      const volumeId = await this.dbs.locks.run(parent.id, async () => {
        await p.postgres(parent.sandbox_id).checkpoint();
        return p.cloneVolume(parent.volume_id);
      });
      rec.volume_id = volumeId;
      const sbx = await p.sandbox(orgId, rec.id, volumeId, {
        cpu: parent.cpu,
        memoryMb: parent.memory_mb,
      });
      rec.sandbox_id = sbx.id;
      await sbx.pg.configureAndStart({
        archiveTimeoutSeconds: rec.archive_timeout_seconds,
        password: rec.password,
      });
      return { sandbox_id: sbx.id, volume_id: volumeId, cpu: sbx.cpu, memory_mb: sbx.memory_mb };
    });
  }
}
