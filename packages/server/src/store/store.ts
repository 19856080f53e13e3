/**
 * The store: every query Warren makes, over Kysely, on SQLite (embedded,
 * single node) or PostgreSQL (WARREN_DATABASE_URL); see ./open.ts. What the
 * two spell differently is in ./dialect.ts.
 */
import { Kysely, Migrator, type Dialect, type Selectable } from 'kysely';
import { WarrenError, type SandboxState } from '@warren/protocol';
import { AdvisoryLocks } from './advisory';
import { isPostgres, jsonHasPair } from './dialect';
import { migrations } from './migrations';
import {
  decodeSandbox,
  decodeSnapshot,
  encodeSandbox,
  encodeSnapshot,
  type SandboxRecord,
  type SandboxRow,
  type SnapshotRecord,
} from './records';
import type { Database, EgressEventTable } from './schema';

export type { SandboxRecord, SnapshotRecord };
export type EgressEventRow = Selectable<EgressEventTable>;

export interface SandboxFilter {
  orgId: string;
  state?: SandboxState;
  metadata: Record<string, string>;
  /** Only these ids (a key restricted to one sandbox). */
  ids?: string[];
  limit: number;
  cursor?: string;
}

function encodeCursor(row: Pick<SandboxRow, 'created_at' | 'id'>): string {
  return Buffer.from(`${row.created_at}|${row.id}`).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdAt || !id) throw new WarrenError('INVALID_REQUEST', 'invalid cursor');
  return { createdAt, id };
}

/** A recorded state change of a sandbox, as listeners are told of it. */
export interface SandboxStateChange {
  sandbox_id: string;
  from_state: string | null;
  to_state: string;
  cause: string;
  at: string;
}

export class Store {
  readonly db: Kysely<Database>;
  /** Told of each sandbox state change once it is committed (webhooks); its errors are its own. */
  onSandboxStateChange: ((change: SandboxStateChange) => Promise<void>) | null = null;

  private readonly locks: AdvisoryLocks;

  /** `poolSize`: connections the dialect may open (PostgreSQL); half of them may hold locks. */
  constructor(dialect: Dialect, poolSize = 1) {
    this.db = new Kysely<Database>({ dialect });
    this.locks = new AdvisoryLocks(this.db, Math.max(1, Math.floor(poolSize / 2)));
  }

  /**
   * Runs `fn` while no other control plane on this database runs work of the
   * same key (./advisory.ts); callers still serialise within the process.
   */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(key, fn);
  }

  async migrate(): Promise<void> {
    const migrator = new Migrator({
      db: this.db,
      provider: { getMigrations: async () => migrations },
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }

  // ---- organisations and tokens ----

  async ensureOrganisation(id: string, name: string): Promise<void> {
    await this.db
      .insertInto('organisations')
      .values({ id, name, created_at: new Date().toISOString() })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  async insertToken(t: {
    id: string;
    orgId: string;
    name: string;
    hash: string;
    prefix: string;
  }): Promise<void> {
    await this.db
      .insertInto('api_tokens')
      .values({
        id: t.id,
        org_id: t.orgId,
        name: t.name,
        token_hash: t.hash,
        created_at: new Date().toISOString(),
        last_used_at: null,
        revoked_at: null,
        scopes: '["admin"]',
        prefix: t.prefix,
        sandbox_id: null,
        sandbox_labels: null,
        expires_at: null,
        created_by: null,
      })
      .execute();
  }

  async setTokenPrefix(id: string, prefix: string): Promise<void> {
    await this.db.updateTable('api_tokens').set({ prefix }).where('id', '=', id).execute();
  }

  async findToken(hash: string): Promise<{ id: string; org_id: string } | undefined> {
    return this.db
      .selectFrom('api_tokens')
      .select(['id', 'org_id'])
      .where('token_hash', '=', hash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
  }

  async countTokens(): Promise<number> {
    const row = await this.db
      .selectFrom('api_tokens')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  // ---- sandboxes ----

  async insertSandbox(rec: SandboxRecord, cause: string): Promise<void> {
    const row = encodeSandbox(rec) as SandboxRow;
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('sandboxes').values(row).execute();
      await tx
        .insertInto('sandbox_events')
        .values({
          sandbox_id: row.id,
          at: row.created_at,
          from_state: null,
          to_state: row.state,
          cause,
        })
        .execute();
    });
  }

  async deleteSandboxRow(id: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('sandbox_events').where('sandbox_id', '=', id).execute();
      await tx.deleteFrom('egress_events').where('sandbox_id', '=', id).execute();
      await tx.deleteFrom('sandboxes').where('id', '=', id).execute();
    });
  }

  async getSandbox(orgId: string, id: string): Promise<SandboxRecord | undefined> {
    const row = await this.db
      .selectFrom('sandboxes')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && decodeSandbox(row);
  }

  /** Any organisation's sandbox: preview URLs name a sandbox by id alone. */
  async getSandboxById(id: string): Promise<SandboxRecord | undefined> {
    const row = await this.db
      .selectFrom('sandboxes')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row && decodeSandbox(row);
  }

  /** Records a state change with its time and cause. */
  async setState(
    id: string,
    to: SandboxState,
    cause: string,
    extra: Pick<Partial<SandboxRow>, 'stopped_at' | 'stop_reason'> = {},
  ): Promise<void> {
    const at = new Date().toISOString();
    const from = await this.db.transaction().execute(async (tx) => {
      // The row is locked until commit, so concurrent changes record their true from_state.
      let read = tx.selectFrom('sandboxes').select('state').where('id', '=', id);
      if (isPostgres(tx)) read = read.forUpdate();
      const current = await read.executeTakeFirst();
      await tx
        .updateTable('sandboxes')
        .set({ ...extra, state: to })
        .where('id', '=', id)
        .execute();
      await tx
        .insertInto('sandbox_events')
        .values({ sandbox_id: id, at, from_state: current?.state ?? null, to_state: to, cause })
        .execute();
      return current?.state ?? null;
    });
    await this.onSandboxStateChange?.({
      sandbox_id: id,
      from_state: from,
      to_state: to,
      cause,
      at,
    });
  }

  async updateSandbox(id: string, patch: Partial<SandboxRecord>): Promise<void> {
    await this.db.updateTable('sandboxes').set(encodeSandbox(patch)).where('id', '=', id).execute();
  }

  async listSandboxes(
    f: SandboxFilter,
  ): Promise<{ rows: SandboxRecord[]; nextCursor: string | null }> {
    let q = this.db.selectFrom('sandboxes').selectAll().where('org_id', '=', f.orgId);
    q = f.state ? q.where('state', '=', f.state) : q.where('state', '!=', 'stopped');
    if (f.ids) q = q.where('id', 'in', f.ids.length ? f.ids : ['']);
    for (const [key, value] of Object.entries(f.metadata)) {
      // Keys are compared as values, never spliced into a JSON path.
      q = q.where(jsonHasPair(this.db, 'sandboxes.metadata', key, value));
    }
    if (f.cursor) {
      const c = decodeCursor(f.cursor);
      q = q.where((eb) =>
        eb.or([
          eb('created_at', '<', c.createdAt),
          eb.and([eb('created_at', '=', c.createdAt), eb('id', '<', c.id)]),
        ]),
      );
    }
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(f.limit + 1)
      .execute();
    const more = rows.length > f.limit;
    const page = rows.slice(0, f.limit);
    const last = page[page.length - 1];
    return { rows: page.map(decodeSandbox), nextCursor: more && last ? encodeCursor(last) : null };
  }

  /** The sandboxes in `states` on a host, or on any of several. */
  async sandboxesOnHost(
    hostId: string | readonly string[],
    states: SandboxState[],
  ): Promise<SandboxRecord[]> {
    const ids = typeof hostId === 'string' ? [hostId] : [...hostId];
    const rows = await this.db
      .selectFrom('sandboxes')
      .selectAll()
      .where('host_id', 'in', ids)
      .where('state', 'in', states)
      .execute();
    return rows.map(decodeSandbox);
  }

  async expiredSandboxes(now: string): Promise<SandboxRecord[]> {
    const rows = await this.db
      .selectFrom('sandboxes')
      .selectAll()
      .where('state', 'in', ['running', 'paused', 'hibernated'])
      .where('expires_at', '<', now)
      .execute();
    return rows.map(decodeSandbox);
  }

  /** Sandboxes that still run on a template, and snapshots that restore with its root. */
  async templateDependents(name: string): Promise<{ sandboxes: number; snapshots: number }> {
    const sbx = await this.db
      .selectFrom('sandboxes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('template', '=', name)
      .where('state', 'not in', ['stopped', 'error'])
      .executeTakeFirst();
    const snaps = await this.db
      .selectFrom('snapshots')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('template', '=', name)
      .executeTakeFirst();
    return { sandboxes: Number(sbx?.n ?? 0), snapshots: Number(snaps?.n ?? 0) };
  }

  async sandboxEvents(
    id: string,
  ): Promise<Array<{ at: string; from_state: string | null; to_state: string; cause: string }>> {
    return this.db
      .selectFrom('sandbox_events')
      .select(['at', 'from_state', 'to_state', 'cause'])
      .where('sandbox_id', '=', id)
      .orderBy('id')
      .execute();
  }

  /** How many sandbox records are in each state, every organisation. */
  async countSandboxesByState(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('sandboxes')
      .select((eb) => ['state', eb.fn.countAll<number>().as('n')])
      .groupBy('state')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  /** Forgets stopped sandboxes older than the retention period. */
  async purgeStopped(before: string): Promise<number> {
    const old = await this.db
      .selectFrom('sandboxes')
      .select('id')
      .where('state', '=', 'stopped')
      .where('stopped_at', '<', before)
      .execute();
    for (const { id } of old) await this.deleteSandboxRow(id);
    return old.length;
  }

  // ---- snapshots ----

  async insertSnapshot(rec: SnapshotRecord): Promise<void> {
    await this.db.insertInto('snapshots').values(encodeSnapshot(rec)).execute();
  }

  async getSnapshot(orgId: string, id: string): Promise<SnapshotRecord | undefined> {
    const row = await this.db
      .selectFrom('snapshots')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && decodeSnapshot(row);
  }

  async listSnapshots(orgId: string): Promise<SnapshotRecord[]> {
    const rows = await this.db
      .selectFrom('snapshots')
      .selectAll()
      .where('org_id', '=', orgId)
      .orderBy('created_at', 'desc')
      .execute();
    return rows.map(decodeSnapshot);
  }

  async deleteSnapshot(id: string): Promise<void> {
    await this.db.deleteFrom('snapshots').where('id', '=', id).execute();
  }

  // ---- egress log ----

  async insertEgressEvent(event: Omit<EgressEventRow, 'id'>): Promise<void> {
    await this.db.insertInto('egress_events').values(event).execute();
  }

  /** Newest first; `before` pages back by id. */
  async egressEvents(
    sandboxId: string,
    q: { decision?: string; limit: number; before?: number },
  ): Promise<EgressEventRow[]> {
    let query = this.db.selectFrom('egress_events').selectAll().where('sandbox_id', '=', sandboxId);
    if (q.decision) query = query.where('decision', '=', q.decision);
    if (q.before) query = query.where('id', '<', q.before);
    return query.orderBy('id', 'desc').limit(q.limit).execute();
  }
}
