/** Store queries of quotas: an organisation's overrides and what it uses now. */
import { sql, type Kysely } from 'kysely';
import type { QuotaOverrides } from '@warren/protocol';
import type { Database } from '../store/schema';

/** A sandbox that holds its share: every state but stopped and error (hibernated ones can wake). */
export interface LiveSandbox {
  id: string;
  memory_mb: number;
  disk_mb: number | null;
  /** The server of a managed database: counted by the databases quota, not the sandboxes one. */
  database: boolean;
}

export class QuotaQueries {
  constructor(private readonly db: Kysely<Database>) {}

  async overrides(orgId: string): Promise<QuotaOverrides> {
    const row = await this.db
      .selectFrom('org_quotas')
      .select('overrides')
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    return row ? (JSON.parse(row.overrides) as QuotaOverrides) : {};
  }

  async setOverrides(orgId: string, overrides: QuotaOverrides): Promise<void> {
    const row = {
      org_id: orgId,
      overrides: JSON.stringify(overrides),
      updated_at: new Date().toISOString(),
    };
    await this.db
      .insertInto('org_quotas')
      .values(row)
      .onConflict((c) =>
        c.column('org_id').doUpdateSet({ overrides: row.overrides, updated_at: row.updated_at }),
      )
      .execute();
  }

  async liveSandboxes(orgId: string): Promise<LiveSandbox[]> {
    const rows = await this.db
      .selectFrom('sandboxes')
      .select(['id', 'memory_mb', 'disk_mb', 'metadata'])
      .where('org_id', '=', orgId)
      .where('state', 'not in', ['stopped', 'error'])
      .execute();
    return rows.map((r) => ({
      id: r.id,
      memory_mb: r.memory_mb,
      disk_mb: r.disk_mb,
      database: 'warren.database' in (JSON.parse(r.metadata) as Record<string, string>),
    }));
  }

  async volumeMb(orgId: string): Promise<number> {
    const row = await this.db
      .selectFrom('volumes')
      .select(sql<number>`coalesce(sum(size_mb), 0)`.as('total'))
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    return Number(row?.total ?? 0);
  }

  async databases(orgId: string): Promise<{ count: number; diskMb: number }> {
    const row = await this.db
      .selectFrom('databases')
      .select([
        sql<number>`count(*)`.as('count'),
        sql<number>`coalesce(sum(disk_mb), 0)`.as('disk'),
      ])
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    return { count: Number(row?.count ?? 0), diskMb: Number(row?.disk ?? 0) };
  }

  async snapshotBytes(orgId: string): Promise<number> {
    const row = await this.db
      .selectFrom('snapshots')
      .select(sql<number>`coalesce(sum(size_bytes), 0)`.as('total'))
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    return Number(row?.total ?? 0);
  }
}
