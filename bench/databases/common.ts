/** What every database row group shares: the platform, the direct side and the databases made. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Database } from '@warren/protocol';
import { createDatabase, withClient } from '../../test/databases';
import type { TestPlatform } from '../../test/fixture';
import { waitFor } from '../../test/wait';
import type { DirectPostgres } from './direct-pg';

export const execFileP = promisify(execFile);

export interface DbBench {
  p: TestPlatform;
  direct: DirectPostgres;
  /** Every database made through the API (deleted at the end, also on failure). */
  made: Set<string>;
  /** Lines printed under the tables. */
  notes: string[];
}

/** POST /v1/databases; the id is remembered for the cleanup. */
export async function create(b: DbBench, body: Record<string, unknown>): Promise<Database> {
  const db = await createDatabase(b.p, body);
  b.made.add(db.id);
  return db;
}

/** The record of a database that the API answered 201 for (a branch, a restore). */
export async function created(b: DbBench, path: string, json: unknown): Promise<Database> {
  const res = await b.p.api(path, { method: 'POST', json });
  const db = (await res.json()) as Database;
  if (res.status !== 201) throw new Error(`POST ${path} -> ${res.status} ${JSON.stringify(db)}`);
  b.made.add(db.id);
  return db;
}

export async function drop(b: DbBench, id: string): Promise<void> {
  const res = await b.p.api(`/v1/databases/${id}`, { method: 'DELETE' });
  if (!res.ok && res.status !== 404) throw new Error(`DELETE ${id} -> ${res.status}`);
  b.made.delete(id);
}

/** A node-postgres connection through the front door (verify-full against the CA) and SELECT 1. */
export async function selectOne(p: TestPlatform, url: string): Promise<void> {
  await withClient(p, url, async (c) => {
    const r = await c.query('SELECT 1 AS one');
    if (r.rows[0]?.one !== 1) throw new Error('SELECT 1 did not answer 1');
  });
}

export const get = (p: TestPlatform, id: string) => p.json<Database>(`/v1/databases/${id}`);

/** Waits until the base backup taken after a create is in the archive (it loads the CPU meanwhile). */
export async function baseBackupDone(p: TestPlatform, id: string): Promise<Database> {
  return waitFor(
    async () => {
      const db = await get(p, id);
      return db.archive.last_base_backup_at ? db : null;
    },
    { what: `the first base backup of ${id}`, timeoutMs: 120_000, intervalMs: 100 },
  );
}

/**
 * Ends the current WAL file and waits until the archive has it (and so every
 * earlier one): a loaded 2-core host can take minutes after a bulk load.
 */
export async function archiveNow(b: DbBench, db: Database): Promise<void> {
  const file = await b.p.context.databases.service.provisioner.postgres(db.sandbox_id).switchWal();
  await waitFor(async () => ((await get(b.p, db.id)).archive.last_archived_wal ?? '') >= file, {
    what: `WAL file ${file} of ${db.id} in the archive`,
    timeoutMs: 600_000,
    intervalMs: 200,
  });
}

/** Progress on stderr (the tables go to stdout). */
export const progress = (line: string) =>
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

/** SQL as the superuser inside the database's sandbox (Unix socket). */
export function sql(b: DbBench, db: Database, query: string, timeoutMs = 300_000) {
  return b.p.context.databases.service.provisioner
    .postgres(db.sandbox_id)
    .sql(query, 'app', { timeoutMs });
}

/** The host path of a database's volume directory (volume.img, mnt/). */
export async function volumeDir(b: DbBench, id: string): Promise<string> {
  const rec = await b.p.context.databases.service.queries.byId(id);
  if (!rec) throw new Error(`no record of ${id}`);
  return `${b.p.home}/volumes/${rec.volume_id}`;
}

export const mib = (bytes: number) => bytes / 1048576;
