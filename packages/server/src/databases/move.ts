/**
 * Databases onto a new volume: after their volume was lost (the watch), and
 * off a drained host. A move takes a base backup, makes the server read-only
 * and ends its sessions, archives its WAL up to that instant, and restores it from the
 * archive onto a new volume where placement puts it (not on a draining
 * host) under a new epoch, so the old copy can no longer archive; then the
 * old server and volume go. Its URL stays. While it moves (seconds: the base
 * backup and the WAL since), connections are refused with DATABASE_NOT_READY
 * and open ones are cut; nothing committed is lost. A move that fails leaves
 * the database where it was, writable again.
 */
import { WarrenError } from '@warren/protocol';
import type { DatabaseRecord } from '../store/databases';
import { fenceKey } from './provision';
import { restoreFromArchive } from './restore';
import type { DatabaseService } from './service';

/**
 * Ends the current WAL segment and waits until the archive has it. A backlog
 * of WAL (after a bulk load) may take a while: the wait gives up only when
 * nothing was archived for 60 s, as long as the archive_command waits for the host.
 */
export async function flushWal(dbs: DatabaseService, db: DatabaseRecord): Promise<void> {
  const file = await dbs.provisioner.postgres(db.sandbox_id).switchWal();
  let last = '';
  let progressAt = Date.now();
  for (;;) {
    await dbs.archiver.collect(db);
    const now = (await dbs.queries.byId(db.id))?.last_archived_wal ?? '';
    if (now >= file) return;
    if (now !== last) [last, progressAt] = [now, Date.now()];
    if (Date.now() - progressAt > 60_000)
      throw new WarrenError(
        'DATABASE_NOT_READY',
        `WAL file ${file} was not archived: nothing was archived for 60 s (last: ${last || 'none'})`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Restores a database to the last archived WAL onto a new volume, under a
 * new epoch (raised first: the old copy, should it run, can no longer
 * archive under this id), and records it there.
 */
export async function restoreOntoNewVolume(
  dbs: DatabaseService,
  db: DatabaseRecord,
  why: string,
  /** Removes the old copy, while the record still names it (and so its host). */
  retire: () => Promise<void> = async () => undefined,
): Promise<void> {
  const epoch = db.epoch + 1;
  await dbs.host.archive.put(fenceKey(db), String(epoch));
  await dbs.queries.update(db.id, { epoch });
  const made = await restoreFromArchive(dbs.host, dbs.queries, dbs.provisioner, db, undefined, {
    orgId: db.org_id,
    dbId: db.id,
    password: db.password,
    archiveTimeoutSeconds: db.archive_timeout_seconds,
    diskMb: db.disk_mb,
    size: { cpu: db.cpu, memoryMb: db.memory_mb },
  });
  const hostId = await dbs.provisioner.hostOf(made.volumeId);
  await retire();
  await dbs.queries.update(db.id, {
    sandbox_id: made.sandboxId,
    volume_id: made.volumeId,
    host_id: hostId,
    state: 'ready',
    last_base_backup_at: null,
  });
  const from = made.fromSeed ? 'the seed cluster: no base backup yet' : 'its last base backup';
  await dbs.queries.event(
    db.id,
    'restored',
    `${why}: restored from the archive (${from}, to ${db.last_archived_wal ?? 'its start'}) onto a new volume on ${hostId}, epoch ${epoch}`,
  );
}

type Log = { warn(o: object, m: string): void };

const READ_ONLY = [
  'ALTER SYSTEM SET default_transaction_read_only = on',
  'SELECT pg_reload_conf()',
  `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
];
const WRITABLE = ['ALTER SYSTEM RESET default_transaction_read_only', 'SELECT pg_reload_conf()'];

/** Moves one database off `hostId`; false when it is not there (any more) or not movable. */
async function move(dbs: DatabaseService, id: string, hostId: string, log: Log): Promise<boolean> {
  return dbs.locks.run(id, async () => {
    let db = await dbs.queries.byId(id);
    if (!db || db.host_id !== hostId) return false;
    if (db.state === 'hibernated') {
      await dbs.lifecycle.use(db.org_id, db.sandbox_id); // woken where it is, to be archived
      await dbs.queries.update(id, { state: 'ready' });
      db = { ...db, state: 'ready' };
    }
    if (db.state !== 'ready') return false;
    const pg = dbs.provisioner.postgres(db.sandbox_id);
    await dbs.queries.update(id, { state: 'recovering' });
    await dbs.queries.event(id, 'moving', `moving off host ${hostId} (drained)`);
    try {
      // A fresh base backup first: the restore then replays only the WAL since.
      await dbs.archiver.baseBackup(db);
      await pg.sql(READ_ONLY, 'postgres');
      await flushWal(dbs, db);
      const retire = async () => {
        await dbs.lifecycle.destroy(db.org_id, db.sandbox_id, 'database moved to another host');
        await dbs.provisioner.removeVolume(db.volume_id);
      };
      const now = (await dbs.queries.byId(id))!;
      await restoreOntoNewVolume(dbs, now, `moved off host ${hostId}`, () =>
        retire().catch((err: Error) =>
          log.warn({ database: id, err: err.message }, 'old copy left'),
        ),
      );
    } catch (err) {
      await pg.sql(WRITABLE, 'postgres').catch(() => undefined);
      await dbs.queries.update(id, { state: 'ready' });
      await dbs.queries.event(id, 'move_failed', `stays on ${hostId}: ${(err as Error).message}`);
      throw err;
    }
    return true;
  });
}

/** Moves every ready or hibernated database off a drained host; returns how many moved. */
export async function moveDatabasesOff(
  dbs: DatabaseService,
  hostId: string,
  log: Log,
): Promise<number> {
  let moved = 0;
  for (const db of await dbs.queries.onHost(hostId)) {
    const ok = await move(dbs, db.id, hostId, log).catch((err: Error) => {
      log.warn({ database: db.id, host: hostId, err: err.message }, 'database move failed');
      return false;
    });
    if (ok) moved++;
  }
  return moved;
}
