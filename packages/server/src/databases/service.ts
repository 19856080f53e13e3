/**
 * Managed PostgreSQL databases: records here, each server in a sandbox of its
 * own with its data on a journaled volume (provision.ts), archiving in
 * archiver.ts, crash recovery and scale to zero in watch.ts, and copies
 * (restores and branches) in copies.ts.
 */
import type { Duplex } from 'node:stream';
import {
  WarrenError,
  newId,
  randomText,
  type CreateDatabaseRequest,
  type Database,
  type HostApi,
  type UpdateDatabaseRequest,
} from '@warren/protocol';
import type { Config } from '../config';
import type { SandboxLifecycle } from '../sandboxes/lifecycle';
import type { QuotaService } from '../quotas/service';
import type { Store } from '../store/store';
import { DatabaseQueries, type DatabaseRecord } from '../store/databases';
import type { DatabaseArchiver } from './archiver';
import { KeyedLock } from './locks';
import {
  DB_ROLE,
  DB_TEMPLATE,
  HANDOFF_SOCKET,
  PGBOUNCER_HANDOFF_SOCKET,
  PGBOUNCER_PORT,
  PG_DATA,
  PG_PORT,
} from './postgres';
import { archivePrefix, fenceKey, type DatabaseProvisioner } from './provision';
import { databaseUrl, type DatabaseAddress } from './urls';

export const DEFAULT_DISK_MB = 1024;
export const DEFAULT_ARCHIVE_TIMEOUT_SECONDS = 60;

/** A strong password: 32 characters of [0-9a-z] (about 165 bits). */
export const newPassword = () => randomText(32);

export class DatabaseService {
  readonly queries: DatabaseQueries;
  readonly locks = new KeyedLock();
  /** Where clients reach the front door; set once it listens. */
  address: DatabaseAddress;
  archiver!: DatabaseArchiver;
  /** Set by the platform: new databases are admitted against the organisation's quotas. */
  quotas: QuotaService | null = null;
  /** Open client connections per database (the front door counts them). */
  openConnections: (databaseId: string) => number = () => 0;
  /** Connections being opened (a wake, the hop into the sandbox) per database. */
  private readonly opening = new Map<string, number>();
  /**
   * Databases the watch is putting to sleep now. A connection that arrives
   * meanwhile waits for the hibernation to finish and wakes the database,
   * instead of reaching a server that is about to be checkpointed.
   */
  readonly sleeping = new Set<string>();

  /** Client connections of a database, open or being opened: while any, it is not idle. */
  connections(databaseId: string): number {
    return this.openConnections(databaseId) + (this.opening.get(databaseId) ?? 0);
  }
  /** The databases with a client connection open through this control plane's front door. */
  connected: () => string[] = () => [];

  constructor(
    store: Store,
    readonly host: HostApi,
    readonly config: Config,
    readonly provisioner: DatabaseProvisioner,
    readonly lifecycle: SandboxLifecycle,
  ) {
    this.queries = new DatabaseQueries(store.db);
    this.address = { host: config.dbHost, port: config.dbPort };
  }

  toApi(db: DatabaseRecord): Database {
    const url = (pooled: boolean) =>
      databaseUrl(this.address, {
        id: db.id,
        user: DB_ROLE,
        password: db.password,
        database: DB_ROLE,
        pooled,
      });
    return {
      id: db.id,
      org_id: db.org_id,
      label: db.label,
      state: db.state as Database['state'],
      version: '17',
      cpu: db.cpu,
      memory_mb: db.memory_mb,
      disk_mb: db.disk_mb,
      scale_to_zero_seconds: db.scale_to_zero_seconds,
      archive_timeout_seconds: db.archive_timeout_seconds,
      user: DB_ROLE,
      database: DB_ROLE,
      password: db.password,
      host: this.address.host,
      port: this.address.port,
      connection_url: url(false),
      pooled_url: url(true),
      parent_id: db.parent_id,
      restored_to: db.restored_to,
      sandbox_id: db.sandbox_id,
      archive: {
        last_archived_wal: db.last_archived_wal,
        last_archived_at: db.last_archived_at,
        last_base_backup_at: db.last_base_backup_at,
        last_base_backup_lsn: db.last_base_backup_lsn,
        epoch: db.epoch,
      },
      archive_lag_seconds: db.state === 'ready' ? this.archiver.lag.seconds(db.id) : null,
      metadata: db.metadata,
      created_at: db.created_at,
    };
  }

  async row(orgId: string, id: string): Promise<DatabaseRecord> {
    const db = await this.queries.get(orgId, id);
    if (!db) throw new WarrenError('DATABASE_NOT_FOUND', `database ${id} does not exist`);
    return db;
  }

  /** Sizes over the template's maxima are refused before anything is made. */
  async checkSizes(req: { cpu?: number; memory_mb?: number }): Promise<void> {
    const t = await this.host.templates.get(DB_TEMPLATE);
    if (!t) throw new WarrenError('TEMPLATE_NOT_FOUND', `template ${DB_TEMPLATE} does not exist`);
    if (t.state === 'building')
      throw new WarrenError('TEMPLATE_NOT_READY', `template ${DB_TEMPLATE} is building`);
    if (t.state !== 'ready')
      throw new WarrenError(
        'TEMPLATE_NOT_BUILT',
        `template ${DB_TEMPLATE} is not built on this host: build it with \`${t.build?.cli}\` or ${t.build?.api}`,
        { template: DB_TEMPLATE, build: t.build },
      );
    if ((req.cpu ?? 0) > t.max_cpu || (req.memory_mb ?? 0) > t.max_memory_mb)
      throw new WarrenError(
        'RESOURCES_OUT_OF_RANGE',
        `a database has at most ${t.max_cpu} vCPU and ${t.max_memory_mb} MiB of memory`,
        { max_cpu: t.max_cpu, max_memory_mb: t.max_memory_mb },
      );
  }

  checkDisk(diskMb: number): void {
    if (diskMb > this.config.volumeMaxMb)
      throw new WarrenError(
        'RESOURCES_OUT_OF_RANGE',
        `disk_mb ${diskMb} is over the volume limit of ${this.config.volumeMaxMb} MiB`,
        { max_disk_mb: this.config.volumeMaxMb },
      );
  }

  /**
   * Makes a record (state `creating`), a volume and a sandbox, puts the seed
   * cluster on the volume and starts Postgres; answers once a query works.
   * The first base backup follows in the background. On failure nothing is left.
   */
  async create(orgId: string, req: CreateDatabaseRequest): Promise<Database> {
    const diskMb = req.disk_mb ?? DEFAULT_DISK_MB;
    this.checkDisk(diskMb);
    await this.checkSizes(req);
    const rec = this.newRecord(orgId, {
      label: req.label,
      disk_mb: diskMb,
      scale_to_zero_seconds: req.scale_to_zero_seconds ?? 0,
      archive_timeout_seconds: req.archive_timeout_seconds ?? DEFAULT_ARCHIVE_TIMEOUT_SECONDS,
      metadata: req.metadata ?? {},
    });
    return this.build(rec, 'created empty', async () => {
      const volumeId = await this.provisioner.newVolume(diskMb, { seeded: true });
      rec.volume_id = volumeId;
      const sbx = await this.provisioner.sandbox(orgId, rec.id, volumeId, {
        cpu: req.cpu,
        memoryMb: req.memory_mb,
      });
      rec.sandbox_id = sbx.id;
      await sbx.pg.init({ archiveTimeoutSeconds: rec.archive_timeout_seconds });
      await sbx.pg.start({ password: rec.password });
      return { sandbox_id: sbx.id, volume_id: volumeId, cpu: sbx.cpu, memory_mb: sbx.memory_mb };
    });
  }

  newRecord(
    orgId: string,
    o: Pick<
      DatabaseRecord,
      'label' | 'disk_mb' | 'scale_to_zero_seconds' | 'archive_timeout_seconds' | 'metadata'
    > &
      Partial<DatabaseRecord>,
  ): DatabaseRecord {
    return {
      id: newId('database'),
      org_id: orgId,
      state: 'creating',
      host_id: this.host.id,
      sandbox_id: '',
      volume_id: '',
      cpu: 0,
      memory_mb: 0,
      password: newPassword(),
      epoch: 1,
      parent_id: null,
      restored_to: null,
      created_at: new Date().toISOString(),
      last_archived_wal: null,
      last_archived_at: null,
      last_base_backup_at: null,
      last_base_backup_lsn: null,
      last_connection_at: null,
      ...o,
    };
  }

  /**
   * The common end of create, branch and restore: the record first (so the
   * id is taken), then `make`, then the archive fence and state `ready`; a
   * failure removes all of it. A base backup follows in the background.
   */
  async build(
    rec: DatabaseRecord,
    how: string,
    make: () => Promise<Pick<DatabaseRecord, 'sandbox_id' | 'volume_id' | 'cpu' | 'memory_mb'>>,
  ): Promise<Database> {
    const insert = () => this.queries.insert(rec, how);
    await (this.quotas ? this.quotas.admitDatabase(rec.org_id, rec.disk_mb, insert) : insert());
    try {
      const made = await make();
      await this.host.archive.put(fenceKey(rec), String(rec.epoch));
      const hostId = await this.provisioner.hostOf(made.volume_id);
      await this.queries.update(rec.id, { ...made, host_id: hostId, state: 'ready' });
    } catch (err) {
      await this.provisioner.discard(rec.org_id, rec.sandbox_id || null, rec.volume_id || null);
      await this.host.archive.remove(archivePrefix(rec)).catch(() => undefined);
      await this.queries.remove(rec.id);
      throw err;
    }
    await this.queries.event(rec.id, 'ready', 'accepting connections');
    const db = (await this.queries.byId(rec.id))!;
    void this.archiver.backupInBackground(db);
    return this.toApi(db);
  }

  async list(orgId: string): Promise<Database[]> {
    return (await this.queries.list(orgId)).map((d) => this.toApi(d));
  }

  async get(orgId: string, id: string): Promise<Database> {
    return this.toApi(await this.row(orgId, id));
  }

  async update(orgId: string, id: string, req: UpdateDatabaseRequest): Promise<Database> {
    await this.row(orgId, id);
    await this.queries.update(id, {
      ...(req.label !== undefined && { label: req.label }),
      ...(req.scale_to_zero_seconds !== undefined && {
        scale_to_zero_seconds: req.scale_to_zero_seconds,
      }),
    });
    return this.get(orgId, id);
  }

  /**
   * Deletes the database: its sandbox, its volume and its archive (WAL and
   * base backups). Branches and restores made from it are databases of their
   * own and stay.
   */
  async delete(orgId: string, id: string): Promise<void> {
    const db = await this.row(orgId, id);
    await this.locks.run(id, async () => {
      await this.provisioner.discard(orgId, db.sandbox_id, db.volume_id);
      await this.host.archive.remove(archivePrefix(db));
      await this.queries.remove(id);
    });
  }

  /** A new password; the old one stops working at once, on both URLs. */
  async rotatePassword(orgId: string, id: string): Promise<Database> {
    const db = await this.ready(orgId, id);
    const password = newPassword();
    await this.provisioner.postgres(db.sandbox_id).setPassword(password);
    await this.queries.update(id, { password });
    await this.queries.event(id, 'password', 'password rotated');
    return this.get(orgId, id);
  }

  async events(orgId: string, id: string) {
    await this.row(orgId, id);
    return this.queries.events(id);
  }

  /** The last lines of the server's log (Postgres writes it under its data directory). */
  async logs(orgId: string, id: string, lines: number): Promise<string[]> {
    const db = await this.ready(orgId, id);
    const out = await this.provisioner
      .postgres(db.sandbox_id)
      // Oldest file first (startup.log holds what came before the log collector).
      .shell(
        `{ cd ${PG_DATA}/log && tail -q -n ${lines} $(ls -tr -- *.log); } 2>/dev/null | tail -n ${lines}`,
      );
    return out.split('\n').filter((l) => l !== '');
  }

  /** A database that accepts connections: a hibernated one is woken first. */
  async ready(orgId: string, id: string): Promise<DatabaseRecord> {
    let db = await this.row(orgId, id);
    if (db.state === 'hibernated') {
      await this.wake(db);
      db = await this.row(orgId, id);
    }
    if (db.state !== 'ready')
      throw new WarrenError('DATABASE_NOT_READY', `database ${id} is ${db.state}`);
    return db;
  }

  /** Restores a hibernated database's sandbox; Postgres goes on where it was. */
  async wake(db: DatabaseRecord): Promise<void> {
    await this.locks.run(db.id, async () => {
      const current = await this.queries.byId(db.id);
      if (current?.state !== 'hibernated') return;
      const sbx = await this.lifecycle.get(db.org_id, db.sandbox_id);
      if (sbx.state === 'stopped') {
        // Its sandbox is gone (it died, or its saved state was lost): the watch starts the
        // server again on its volume, as after a crash.
        await this.queries.update(db.id, { state: 'recovering' });
        await this.queries.event(
          db.id,
          'crashed',
          `sandbox ${db.sandbox_id} stopped while the database was hibernated (${sbx.stop_reason ?? 'no reason recorded'})`,
        );
        throw new WarrenError(
          'DATABASE_NOT_READY',
          `database ${db.id} is recovering: its server is being started again; try again in a few seconds`,
        );
      }
      await this.lifecycle.use(db.org_id, db.sandbox_id);
      await this.queries.update(db.id, {
        state: 'ready',
        last_connection_at: new Date().toISOString(),
      });
      await this.queries.event(db.id, 'woken', 'woken by a connection');
    });
  }

  /** The front door's route: a byte stream to Postgres (or PgBouncer) in the database's sandbox. */
  async connect(databaseId: string, pooled: boolean): Promise<Duplex> {
    const db = await this.queries.byId(databaseId);
    if (!db) throw new WarrenError('DATABASE_NOT_FOUND', `database "${databaseId}" does not exist`);
    // Counted from here: scale to zero must not put it back to sleep between its
    // wake and the front door counting the connection open (a slow hop on a busy host).
    this.opening.set(db.id, (this.opening.get(db.id) ?? 0) + 1);
    try {
      // The watch checks for connections (this one counts from above) only after it
      // marks the database sleeping: either it sees this one and stays awake, or this
      // one sees it sleeping and waits for the hibernation, then wakes the database.
      if (this.sleeping.has(db.id)) await this.locks.run(db.id, () => Promise.resolve());
      const live = await this.ready(db.org_id, db.id);
      // PostgreSQL (or PgBouncer) takes the connection itself, by descriptor: its
      // bytes skip the guest's relay (see the START script).
      const [port, handoff] = pooled
        ? [PGBOUNCER_PORT, PGBOUNCER_HANDOFF_SOCKET]
        : [PG_PORT, HANDOFF_SOCKET];
      return await this.host.sandboxes.openPort(live.sandbox_id, port, { handoff });
    } finally {
      const n = (this.opening.get(db.id) ?? 1) - 1;
      if (n > 0) this.opening.set(db.id, n);
      else this.opening.delete(db.id);
    }
  }
}
