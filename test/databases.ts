/** Helpers of the database tests: real psql and node-postgres clients against the front door. */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Database } from '@warren/protocol';
import type { TestPlatform } from './fixture';
import { waitFor } from './wait';

const run = promisify(execFile);

/** Runs psql on a URL; resolves with code, stdout and stderr (never throws on a failed query). */
export async function psql(url: string, sql: string, env: NodeJS.ProcessEnv = {}) {
  try {
    const { stdout, stderr } = await run(
      'psql',
      [url, '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql],
      {
        timeout: 60_000,
        env: { ...process.env, PGCONNECT_TIMEOUT: '30', ...env },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A node-postgres client verifying the server against the install's CA (verify-full). */
export async function connect(p: TestPlatform, url: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    ssl: { ca: readFileSync(p.dbCaFile, 'utf8') },
  });
  // A server that goes away (a test kills it) fails the client's queries; without a
  // listener the same error, emitted on the idle client too, would end the test run.
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** Runs fn with a connected client and always ends it. */
export async function withClient<T>(
  p: TestPlatform,
  url: string,
  fn: (c: pg.Client) => Promise<T>,
): Promise<T> {
  const c = await connect(p, url);
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** The SQLSTATE a connection attempt fails with. */
export async function connectError(p: TestPlatform, url: string): Promise<string | undefined> {
  try {
    await withClient(p, url, async () => undefined);
  } catch (err) {
    return (err as { code?: string }).code ?? (err as Error).message;
  }
  return undefined;
}

export async function createDatabase(
  p: TestPlatform,
  body: Record<string, unknown> = { label: 'test' },
): Promise<Database> {
  const res = await p.api('/v1/databases', { method: 'POST', json: body });
  const db = (await res.json()) as Database;
  if (res.status !== 201) throw new Error(`create database -> ${res.status} ${JSON.stringify(db)}`);
  return db;
}

export async function dropDatabase(p: TestPlatform, id: string): Promise<void> {
  await p.api(`/v1/databases/${id}`, { method: 'DELETE' });
}

/** Waits for the first base backup of a database (taken in the background right after create). */
export function firstBaseBackup(p: TestPlatform, db: Database) {
  return waitFor(
    async () => (await p.json<Database>(`/v1/databases/${db.id}`)).archive.last_base_backup_at,
    { what: 'first base backup', timeoutMs: 60_000, intervalMs: 200 },
  );
}

/** The events of a database, oldest first. */
export async function databaseEvents(p: TestPlatform, id: string) {
  return (
    await p.json<{ items: Array<{ kind: string; message: string }> }>(`/v1/databases/${id}/events`)
  ).items;
}

/**
 * Ends the current WAL file (as the server's superuser, inside the sandbox) and waits until the
 * archive has it. Within 90 s: on a 2-core machine loaded by other suites a 16 MiB WAL file took
 * up to 50 s to stream out of its sandbox (docs/limits.md, "WAL archiving slows down").
 */
export async function archiveNow(p: TestPlatform, db: Database): Promise<string> {
  const server = p.context.databases.service.provisioner.postgres(db.sandbox_id);
  const file = await server.switchWal();
  await waitFor(
    async () =>
      ((await p.json<Database>(`/v1/databases/${db.id}`)).archive.last_archived_wal ?? '') >= file,
    { what: `WAL file ${file} of ${db.id} in the archive`, timeoutMs: 90_000, intervalMs: 100 },
  );
  return file;
}

export async function waitForState(p: TestPlatform, id: string, state: string, timeoutMs = 60_000) {
  return waitFor(
    async () => {
      const db = await p.json<Database>(`/v1/databases/${id}`);
      return db.state === state ? db : null;
    },
    { what: `database ${id} to be ${state}`, timeoutMs, intervalMs: 200 },
  );
}
