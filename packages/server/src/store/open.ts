import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { SqliteDialect } from 'kysely';
import type { Config } from '../config';
import { openPostgresStore } from './postgres';
import { Store } from './store';

/** The store the configuration names: PostgreSQL with WARREN_DATABASE_URL, else SQLite under home. */
export function openStore(config: Pick<Config, 'home' | 'databaseUrl'>): Promise<Store> {
  return config.databaseUrl
    ? openPostgresStore(config.databaseUrl)
    : openSqliteStore(join(config.home, 'warren.db'));
}

/** The embedded store: one SQLite file, readable by root only (it holds sandbox env vars). */
export async function openSqliteStore(path: string): Promise<Store> {
  const db = new SQLite(path);
  chmodSync(path, 0o600);
  db.pragma('journal_mode = WAL');
  // WAL with NORMAL sync: no corruption on power loss, at most the last commits lost; no fsync per request.
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  const store = new Store(new SqliteDialect({ database: db }));
  await store.migrate();
  return store;
}
