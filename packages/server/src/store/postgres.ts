/**
 * The PostgreSQL store (WARREN_DATABASE_URL): Kysely's PostgresDialect over a
 * node-postgres pool. A URL that does not parse, a server that cannot be
 * reached and a refused login all fail the start with one line that names
 * the URL (password hidden) and the reason.
 */
import pg from 'pg';
import { PostgresDialect } from 'kysely';
import { Store } from './store';

const INT8 = 20;
const NUMERIC = 1700;

/**
 * Integer columns are bigint, and count(*) and sum() of them are bigint or
 * numeric, which pg hands over as strings by default. They come back as
 * numbers when they fit a double exactly, as from SQLite; a value past
 * 2^53 (Warren stores none) stays a string rather than lose digits.
 */
function numberIfExact(text: string): number | string {
  const n = Number(text);
  return Number.isFinite(n) && Math.abs(n) <= Number.MAX_SAFE_INTEGER ? n : text;
}

const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return numberIfExact;
    return format === 'binary'
      ? pg.types.getTypeParser(oid, 'binary')
      : pg.types.getTypeParser(oid, 'text');
  },
} as pg.CustomTypesConfig;

/** The URL with its password replaced by `***`, to show in errors and logs. */
export function redactUrl(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:@/]*):[^@/]*@/, '$1:***@');
}

export interface PostgresStoreOptions {
  /** Most connections this control plane opens (default 10). */
  maxConnections?: number;
  /** How long to wait for a connection before giving up (default 10 s). */
  connectTimeoutMs?: number;
}

export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<Store> {
  const shown = redactUrl(url);
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new Error(
      `WARREN_DATABASE_URL must be a postgres:// URL (postgres://user:password@host:port/database), not ${JSON.stringify(shown)}`,
    );
  const max = options.maxConnections ?? 10;
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    types: typeParsers,
    application_name: 'warren',
  });
  // An idle connection the server closed (restart, idle timeout): the pool drops it and
  // opens another on the next query. Without a listener it would end the process.
  pool.on('error', (err) => {
    process.stderr.write(`[warren] store connection lost (${shown}): ${err.message}\n`);
  });
  // The same for a connection checked out when the server goes away (between two queries
  // of a transaction, or one holding an advisory lock): its query fails with the error,
  // and the pool drops it when it is released, as it is no longer queryable.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  try {
    await pool.query('select 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    const why = err instanceof Error && err.message ? err.message : String(err);
    throw new Error(`cannot open the PostgreSQL store at ${shown} (WARREN_DATABASE_URL): ${why}`);
  }
  const store = new Store(new PostgresDialect({ pool }), max);
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => undefined);
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(`migrating the PostgreSQL store at ${shown} failed: ${why}`);
  }
  return store;
}
