/**
 * Continuous archiving. Postgres's archive_command in the sandbox puts each
 * finished WAL file into an outbox on the data volume and waits; here the
 * control plane has the host move outbox files into the archive (the
 * sandbox holds no storage credentials), and Postgres's wait ends when its
 * file is gone. Moves are fenced by the database's epoch. Base backups are
 * taken at create and every `dbBackupIntervalSeconds`. Each pass also
 * measures the archive lag (archive-lag.ts).
 */
import type { HostApi } from '@warren/protocol';
import type { Config } from '../config';
import type { DatabaseLog } from './index';
import type { DatabaseQueries, DatabaseRecord } from '../store/databases';
import { ArchiveLag } from './archive-lag';
import { KeyedLock } from './locks';
import { PG_OUTBOX } from './postgres';
import { archivePrefix, fenceKey, walPrefix, type DatabaseProvisioner } from './provision';
import { hostIds } from '../hosts/router';

/** A collection of one database that takes longer than this is logged (it holds up the others). */
const SLOW_COLLECT_MS = 5000;

export class DatabaseArchiver {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private readonly backingUp = new Set<string>();
  private readonly collecting = new KeyedLock();
  readonly lag: ArchiveLag;

  constructor(
    private readonly host: HostApi,
    private readonly queries: DatabaseQueries,
    private readonly provisioner: DatabaseProvisioner,
    private readonly config: Config,
    private readonly log: Pick<DatabaseLog, 'warn'>,
  ) {
    const limit = config.dbArchiveLagSeconds;
    const listEveryMs = Math.max(config.dbArchivePollMs, Math.min(5000, limit * 100));
    this.lag = new ArchiveLag(queries, limit, listEveryMs);
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .catch((err: Error) => this.log.warn({ err: err.message }, 'archive pass'))
        .finally(() => (this.running = null));
    }, this.config.dbArchivePollMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    while (this.backingUp.size > 0) await new Promise((r) => setTimeout(r, 50));
  }

  /** One round over the ready databases of this host. */
  async pass(): Promise<void> {
    const dbs = await this.queries.onHost(hostIds(this.host));
    this.lag.keepOnly(new Set(dbs.map((d) => d.id)));
    for (const db of dbs) {
      if (db.state !== 'ready') {
        this.lag.notReady(db.id);
        continue;
      }
      const started = Date.now();
      await this.collectAndMeasure(db).catch((err: Error) =>
        this.log.warn({ database: db.id, err: err.message }, 'archive pass failed'),
      );
      // Every database's archiving waits on this pass: say when one held it up.
      const tookMs = Date.now() - started;
      if (tookMs > SLOW_COLLECT_MS)
        this.log.warn({ database: db.id, ms: tookMs }, 'archive pass: slow collection');
      if (this.backingUp.has(db.id) || !this.backupDue(db)) continue;
      // Read again: a backup that ended while this pass collected has updated the record.
      const now = await this.queries.byId(db.id);
      if (now?.state === 'ready' && this.backupDue(now)) void this.backupInBackground(now);
    }
  }

  /** Collects, listing the outbox first when due, and opens or closes a lag episode. */
  private async collectAndMeasure(db: DatabaseRecord): Promise<void> {
    const list = async () => {
      // The host may throw at once (a sandbox no longer running): a failed listing all the same.
      const listing = await Promise.resolve()
        .then(() => this.host.files.list(db.sandbox_id, PG_OUTBOX))
        .catch(() => null);
      this.lag.listed(db.id, listing);
    };
    const listedFirst = this.lag.listDue(db.id);
    if (listedFirst) await list();
    const error = await this.collect(db).then(
      () => null,
      (err: Error) => err,
    );
    if (error) this.log.warn({ database: db.id, err: error.message }, 'WAL archiving failed');
    // A failed collection left files waiting: see which, unless just seen.
    if (error && !listedFirst) await list();
    this.lag.collected(db.id, error);
    // The record again: this pass's collection may have moved the last archived WAL on.
    const now = await this.queries.byId(db.id);
    if (now?.state === 'ready')
      await this.lag
        .check(now)
        .catch((err: Error) =>
          this.log.warn({ database: db.id, err: err.message }, 'archive lag not recorded'),
        );
  }

  private backupDue(db: DatabaseRecord): boolean {
    return (
      !db.last_base_backup_at ||
      Date.now() - Date.parse(db.last_base_backup_at) > this.config.dbBackupIntervalSeconds * 1000
    );
  }

  /** Moves what waits in the outbox into the archive now; returns the last file moved. */
  collect(db: DatabaseRecord): Promise<string | null> {
    // One collector per database at a time: the background pass and a restore's flush.
    return this.collecting.run(db.id, () => this.collectNow(db));
  }

  private async collectNow(db: DatabaseRecord): Promise<string | null> {
    const moved = await this.host.archive.collect(db.sandbox_id, PG_OUTBOX, walPrefix(db), {
      key: fenceKey(db),
      value: String(db.epoch),
    });
    const last = moved.map((m) => m.key.slice(m.key.lastIndexOf('/') + 1)).at(-1) ?? null;
    if (last)
      await this.queries.update(db.id, {
        last_archived_wal: last,
        last_archived_at: new Date().toISOString(),
      });
    return last;
  }

  /** A base backup unless one of this database runs already (the first one, at create, too). */
  async backupInBackground(db: DatabaseRecord): Promise<void> {
    if (this.backingUp.has(db.id)) return;
    this.backingUp.add(db.id);
    try {
      await this.baseBackup(db);
    } catch (err) {
      this.log.warn({ database: db.id, err: (err as Error).message }, 'base backup failed');
    } finally {
      this.backingUp.delete(db.id);
    }
  }

  /** Takes a base backup in the sandbox and moves it into the archive. */
  async baseBackup(db: DatabaseRecord): Promise<void> {
    const name = `base-${Date.now()}`;
    const pg = this.provisioner.postgres(db.sandbox_id);
    const b = await pg.baseBackup(name);
    const at = new Date().toISOString(); // consistent from here on: restores to later times use it
    const key = `${archivePrefix(db)}base/${name}.tar.gz`;
    try {
      const stored = await this.host.archive.upload(db.sandbox_id, b.path, key);
      await this.queries.addBackup({
        database_id: db.id,
        epoch: db.epoch,
        key,
        start_lsn: b.startLsn,
        at,
        size: stored.size,
      });
      await this.queries.update(db.id, {
        last_base_backup_at: at,
        last_base_backup_lsn: b.startLsn,
      });
    } finally {
      const dir = b.path.slice(0, b.path.lastIndexOf('/'));
      await this.host.files.remove(db.sandbox_id, dir, true).catch(() => undefined);
    }
  }
}
