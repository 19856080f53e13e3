/**
 * The database watch: every few seconds, for the databases of this host,
 * - a ready database whose sandbox is no longer live (its runtime died) is
 *   started again on the same volume, and Postgres's crash recovery brings
 *   back every committed row; when the volume itself is gone, it is restored
 *   from the archive onto a new volume under a new epoch;
 * - a ready database with scale_to_zero_seconds and no client connection for
 *   that long is hibernated (the front door wakes it on the next connection).
 *   Connections count through every control plane: each one records in the
 *   store (`last_connection_at`) when its front door opens or closes one, and
 *   at each pass for those that stay open.
 * The platform's own checks run inside the sandbox, never through the front
 * door, so they never count as connections.
 */
import type { DatabaseRecord } from '../store/databases';
import type { DatabaseLog } from './index';
import { restoreOntoNewVolume } from './move';
import type { DatabaseService } from './service';
import { hostIds, leads } from '../hosts/router';

export class DatabaseWatch {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** When each database last had a client connection open (in memory; start counts as one). */
  private readonly lastSeen = new Map<string, number>();
  /** When this control plane last wrote `last_connection_at` of each database. */
  private readonly recorded = new Map<string, number>();

  constructor(
    private readonly dbs: DatabaseService,
    private readonly log: Pick<DatabaseLog, 'warn' | 'info'>,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      // A host that does not answer (a joined agent gone) fails the pass: the next one tries again.
      this.running ??= this.pass()
        .catch((err: Error) => this.log.warn({ err: err.message }, 'database watch'))
        .finally(() => (this.running = null));
    }, this.dbs.config.dbWatchIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Called by the front door as client connections open and close. */
  seen(databaseId: string): void {
    this.lastSeen.set(databaseId, Date.now());
    this.record(databaseId);
  }

  /** Writes that a client was connected just now, at most once a second per database. */
  private record(databaseId: string): void {
    const now = Date.now();
    if (now - (this.recorded.get(databaseId) ?? 0) < 1000) return;
    this.recorded.set(databaseId, now);
    void this.dbs.queries
      .update(databaseId, { last_connection_at: new Date(now).toISOString() })
      .catch(() => this.recorded.delete(databaseId));
  }

  /** When a client was last connected, by this control plane or as another one recorded it. */
  private lastClient(db: DatabaseRecord): number {
    const stored = db.last_connection_at ? Date.parse(db.last_connection_at) : 0;
    return Math.max(this.lastSeen.get(db.id) ?? 0, stored);
  }

  async pass(): Promise<void> {
    for (const id of this.dbs.connected()) this.record(id);
    const live = new Set(await this.dbs.host.sandboxes.live());
    // A lost host's databases too: their servers are gone, and they are restored elsewhere.
    const lost = leads(this.dbs.host) ? await this.dbs.provisioner.lostHosts() : [];
    const hosts = [...hostIds(this.dbs.host), ...lost];
    for (const db of await this.dbs.queries.onHost(hosts)) {
      if (this.dbs.locks.busy(db.id)) continue;
      try {
        if ((db.state === 'ready' && !live.has(db.sandbox_id)) || db.state === 'recovering')
          await this.recover(db);
        else if (db.state === 'ready' && db.scale_to_zero_seconds > 0) await this.maybeSleep(db);
      } catch (err) {
        this.log.warn({ database: db.id, err: (err as Error).message }, 'database watch');
      }
    }
  }

  private async maybeSleep(db: DatabaseRecord): Promise<void> {
    if (this.dbs.connections(db.id) > 0) return this.seen(db.id);
    const idle = (d: DatabaseRecord) =>
      Date.now() - this.lastClient(d) >= d.scale_to_zero_seconds * 1000;
    if (!this.lastSeen.has(db.id)) this.lastSeen.set(db.id, Date.now()); // a start counts as one
    if (!idle(db)) return;
    await this.dbs.locks.run(db.id, async () => {
      this.dbs.sleeping.add(db.id);
      try {
        await this.sleep(db, idle);
      } finally {
        this.dbs.sleeping.delete(db.id);
      }
    });
  }

  /** Hibernates the database's sandbox (under its lock, marked sleeping) if it is still idle. */
  private async sleep(db: DatabaseRecord, idle: (d: DatabaseRecord) => boolean): Promise<void> {
    const current = await this.dbs.queries.byId(db.id);
    if (current?.state !== 'ready' || this.dbs.connections(db.id) > 0 || !idle(current)) return;
    // What waits in the outbox goes to the archive before the server sleeps.
    await this.dbs.archiver.collect(current).catch(() => undefined);
    // Queries whose client went away would keep host sockets open in the sandbox.
    await this.dbs.provisioner
      .postgres(current.sandbox_id)
      .endOrphans()
      .catch(() => undefined);
    const sbx = await this.dbs.lifecycle.get(db.org_id, db.sandbox_id);
    if (sbx.state === 'running' || sbx.state === 'paused') {
      const row = await this.dbs.lifecycle.row(db.org_id, db.sandbox_id);
      await this.dbs.lifecycle.transition(row, 'hibernate', `database ${db.id} scaled to zero`);
    }
    // A server that died since the pass began is not asleep: the next pass recovers it
    // (a database marked hibernated on a stopped sandbox could never be woken).
    if ((await this.dbs.lifecycle.get(db.org_id, db.sandbox_id)).state !== 'hibernated') return;
    await this.dbs.queries.update(db.id, { state: 'hibernated' });
    await this.dbs.queries.event(
      db.id,
      'hibernated',
      `no connection for ${db.scale_to_zero_seconds} s: scaled to zero`,
    );
  }

  /** Starts the database again on its volume, or restores it from the archive if the volume is lost. */
  async recover(db: DatabaseRecord): Promise<void> {
    await this.dbs.locks.run(db.id, async () => {
      // The pass listed the live sandboxes before it took this lock: a wake or a
      // recovery that finished meanwhile is not a crash.
      if (db.state === 'ready') {
        const current = await this.dbs.queries.byId(db.id);
        if (current?.state !== 'ready' || current.sandbox_id !== db.sandbox_id) return;
        if ((await this.dbs.host.sandboxes.live()).includes(db.sandbox_id)) return;
      }
      const p = this.dbs.provisioner;
      // Read before the destroy below removes the sandbox's cgroup.
      const oom = await this.dbs.host.sandboxes.oomKilled(db.sandbox_id).catch(() => false);
      if (db.state !== 'recovering') {
        await this.dbs.queries.update(db.id, { state: 'recovering' });
        await this.dbs.queries.event(
          db.id,
          'crashed',
          `sandbox ${db.sandbox_id} stopped running${oom ? ' (out of memory)' : ''}`,
        );
      }
      await this.dbs.lifecycle
        .destroy(
          db.org_id,
          db.sandbox_id,
          oom ? 'out of memory (database server died)' : 'database server died',
        )
        .catch(() => undefined);
      const volumeOk = await this.dbs.host.volumes.mount(db.volume_id).then(
        () => true,
        () => false,
      );
      try {
        if (volumeOk) {
          const sbx = await p.sandbox(db.org_id, db.id, db.volume_id, {
            cpu: db.cpu,
            memoryMb: db.memory_mb,
          });
          try {
            await p.removeLock(sbx.id);
            await sbx.pg.configureAndStart({ archiveTimeoutSeconds: db.archive_timeout_seconds });
          } catch (err) {
            await p.discard(db.org_id, sbx.id, null);
            throw err;
          }
          await this.dbs.queries.update(db.id, { sandbox_id: sbx.id, state: 'ready' });
          this.lastSeen.set(db.id, Date.now()); // a start counts as a connection
          await this.dbs.queries.event(
            db.id,
            'recovered',
            `started again on its volume in sandbox ${sbx.id}`,
          );
        } else {
          await this.restoreLost(db);
        }
      } catch (err) {
        await this.dbs.queries.update(db.id, { state: 'failed' });
        await this.dbs.queries.event(
          db.id,
          'failed',
          `could not recover: ${(err as Error).message}`,
        );
        throw err;
      }
    });
  }

  /** The volume is gone: restore to the last archived WAL onto a new volume. */
  private async restoreLost(db: DatabaseRecord): Promise<void> {
    await this.dbs.provisioner.removeVolume(db.volume_id).catch(() => undefined);
    await restoreOntoNewVolume(this.dbs, db, 'volume lost');
  }
}
