/**
 * The parts of a database on its host: a journaled data volume and a sandbox
 * from the postgres template with the volume at PG_MOUNT. Each maker undoes
 * its own work on failure, so a failed create, branch or restore leaves
 * nothing behind.
 */
import { posix } from 'node:path';
import { newId, type HostApi } from '@warren/protocol';
import type { SandboxCreator } from '../sandboxes/create';
import type { SandboxLifecycle } from '../sandboxes/lifecycle';
import type { DatabaseRecord } from '../store/databases';
import { DB_TEMPLATE, GuestPostgres, PG_DATA, PG_MOUNT, PG_OUTBOX, PG_STAGING } from './postgres';
import { RESTORE_BASE_NAME, RESTORE_WAL_NAME, SEED_DIR, SEEDED_DATA } from './postgres/layout';
import type { HostService } from '../hosts/service';

/** In a copy of a running database's volume, what belongs to the original (relative to PG_MOUNT). */
const ORIGIN_FILES = [`${PG_DATA}/postmaster.pid`, PG_OUTBOX, PG_STAGING].map((p) =>
  posix.relative(PG_MOUNT, p),
);

export interface Sizing {
  cpu?: number;
  memoryMb?: number;
}

export class DatabaseProvisioner {
  /** Set by the platform: which host a new database goes to (one host without it). */
  hosts: HostService | null = null;

  constructor(
    private readonly host: HostApi,
    private readonly creator: SandboxCreator,
    private readonly lifecycle: SandboxLifecycle,
  ) {}

  /**
   * A new data volume (journaled: it holds a database). With `seeded`, the
   * host copies the template's seed cluster onto it (as `data.seed`, which
   * init takes as the new data directory): far faster than a copy made in
   * the sandbox.
   *
   * `unpack`: an archived base backup the host unpacks onto it as RESTORE_BASE;
   * `wal`: archived WAL files the host copies onto it into RESTORE_WAL.
   */
  async newVolume(
    sizeMb: number,
    o: { seeded?: boolean; unpack?: string; wal?: string[] } = {},
  ): Promise<string> {
    const id = newId('volume');
    // The server's sandbox follows its volume (placement pins it there).
    const placed = await this.hosts?.place({ template: DB_TEMPLATE, memoryMb: 0 });
    if (placed) this.hosts!.router.placeVolume(id, placed.hostId);
    await this.host.volumes.create(id, sizeMb, {
      journal: true,
      ...(o.seeded && {
        seed: { template: DB_TEMPLATE, from: SEED_DIR, to: SEEDED_DATA.slice(PG_MOUNT.length + 1) },
      }),
      ...(o.unpack && { unpack: { key: o.unpack, to: RESTORE_BASE_NAME } }),
      ...(o.wal && { fetch: { keys: o.wal, to: RESTORE_WAL_NAME } }),
    });
    return id;
  }

  /** The host a volume is on (where its database's server runs). */
  async hostOf(volumeId: string): Promise<string> {
    return this.hosts ? this.hosts.router.volumeHost(volumeId) : this.host.id;
  }

  /** Hosts that were lost: their databases are recovered elsewhere (see DatabaseWatch). */
  async lostHosts(): Promise<string[]> {
    if (!this.hosts) return [];
    return (await this.hosts.queries.list()).filter((h) => h.state === 'lost').map((h) => h.id);
  }

  /**
   * A copy of a running database's volume (a branch) without what belongs to
   * the original: its lock file, WAL waiting for its archive, staging. The
   * host empties them before any sandbox sees the copy.
   */
  async cloneVolume(from: string): Promise<string> {
    const id = newId('volume');
    await this.host.volumes.clone(from, id, { clear: ORIGIN_FILES });
    return id;
  }

  /** Starts a sandbox for database `dbId` on volume `volumeId`; returns its id and sizes. */
  async sandbox(
    orgId: string,
    dbId: string,
    volumeId: string,
    size: Sizing,
  ): Promise<{ id: string; cpu: number; memory_mb: number; pg: GuestPostgres }> {
    const sbx = await this.creator.launch(orgId, {
      template: DB_TEMPLATE,
      cpu: size.cpu,
      memoryMb: size.memoryMb,
      hostVolumes: [{ id: volumeId, name: dbId, mount_path: PG_MOUNT, read_only: false }],
      env: {},
      metadata: { 'warren.database': dbId },
      persistent: true,
      idleTimeoutSeconds: 0,
      network: { policy: { mode: 'none' }, secrets: [] },
      cause: `server of database ${dbId}`,
    });
    return { id: sbx.id, cpu: sbx.cpu, memory_mb: sbx.memory_mb, pg: this.postgres(sbx.id) };
  }

  postgres(sandboxId: string): GuestPostgres {
    return new GuestPostgres(this.host, sandboxId);
  }

  /**
   * The lock file of a server that died with its sandbox: its pid may be
   * taken by another process in the new sandbox, so Postgres must not see it.
   */
  async removeLock(sandboxId: string): Promise<void> {
    await this.host.files
      .remove(sandboxId, `${PG_DATA}/postmaster.pid`, false)
      .catch(() => undefined);
  }

  /** Stops a database's sandbox (if any) and removes its volume; safe to repeat. */
  async discard(orgId: string, sandboxId: string | null, volumeId: string | null): Promise<void> {
    if (sandboxId)
      await this.lifecycle.destroy(orgId, sandboxId, 'database removed').catch(() => undefined);
    if (volumeId) await this.removeVolume(volumeId);
  }

  /** Right after a sandbox stops its volume may still be busy: try a few times. */
  async removeVolume(volumeId: string): Promise<void> {
    for (let i = 0; ; i++) {
      try {
        await this.host.volumes.remove(volumeId);
        return;
      } catch (err) {
        if (i >= 5) throw err;
        await new Promise((r) => setTimeout(r, 200 * (i + 1)));
      }
    }
  }
}

export function archivePrefix(db: Pick<DatabaseRecord, 'id'>): string {
  return `databases/${db.id}/`;
}
export const walPrefix = (db: Pick<DatabaseRecord, 'id'>) => `${archivePrefix(db)}wal/`;
export const fenceKey = (db: Pick<DatabaseRecord, 'id'>) => `${archivePrefix(db)}epoch`;
