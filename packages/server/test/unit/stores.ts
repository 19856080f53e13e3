/**
 * The two stores for tests that run against both: SQLite in a temporary file,
 * and PostgreSQL in a private cluster (store/pg-local.ts) started once per
 * test file, with a fresh database for every store a test opens. Call
 * useTestStores() at the top of the file: its hook stops the cluster and
 * removes every file when the file's tests are done.
 */
import { after } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/open';
import { startLocalPostgres, type LocalPostgres } from '../../src/store/pg-local';
import { openPostgresStore } from '../../src/store/postgres';
import type { Store } from '../../src/store/store';

export type StoreKind = 'sqlite' | 'postgres';
export const STORE_KINDS: StoreKind[] = ['sqlite', 'postgres'];

let cluster: Promise<LocalPostgres> | null = null;
let databases = 0;
const dirs: string[] = [];

export function useTestStores(): void {
  after(async () => {
    const c = cluster;
    cluster = null;
    if (c) await (await c).stop();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
}

export function testCluster(): Promise<LocalPostgres> {
  cluster ??= startLocalPostgres({ unsafeNoFsync: true });
  return cluster;
}

/**
 * Where a new, empty store lives: the SQLite file's path, or a PostgreSQL URL.
 * Open it as often as a test needs (two control planes on one database).
 */
export async function newDatabase(kind: StoreKind): Promise<string> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync('/tmp/wst-');
    dirs.push(dir);
    return join(dir, 'warren.db');
  }
  return (await testCluster()).createDatabase(`t${++databases}`);
}

export function openAt(kind: StoreKind, where: string): Promise<Store> {
  return kind === 'sqlite' ? openSqliteStore(where) : openPostgresStore(where);
}

/** A new, empty store of this kind. */
export async function openTestStore(kind: StoreKind): Promise<Store> {
  return openAt(kind, await newDatabase(kind));
}

/** Platform options that put the store in PostgreSQL (none for SQLite: the default). */
export async function storeOptions(kind: StoreKind): Promise<{ databaseUrl?: string }> {
  return kind === 'sqlite' ? {} : { databaseUrl: await newDatabase(kind) };
}
