/** Store queries of usage: samples, hourly totals, and the last counters of each sandbox. */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { UsageFigures } from '@warren/protocol';
import { greatest } from './dialect';
import type { Database, UsageSampleTable, UsageSandboxTable } from './schema';

export type UsageSandboxRow = Selectable<UsageSandboxTable>;
export type UsageSampleRow = Omit<Selectable<UsageSampleTable>, 'id'>;

/** The start of the hour a time falls in (ISO 8601). */
export function hourOf(iso: string): string {
  const d = new Date(iso);
  d.setUTCMinutes(0, 0, 0);
  return d.toISOString();
}

export interface SandboxFigures extends UsageFigures {
  sandbox_id: string;
}

export class UsageQueries {
  constructor(private readonly db: Kysely<Database>) {}

  async sandbox(id: string): Promise<UsageSandboxRow | undefined> {
    return this.db
      .selectFrom('usage_sandboxes')
      .selectAll()
      .where('sandbox_id', '=', id)
      .executeTakeFirst();
  }

  /** Stores a sample, adds it to its hour, and keeps the counters it was counted from. */
  async record(sandbox: UsageSandboxRow, sample: UsageSampleRow): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('usage_samples').values(sample).execute();
      await tx
        .insertInto('usage_hours')
        .values({
          sandbox_id: sample.sandbox_id,
          hour: hourOf(sample.at),
          cpu_seconds: sample.cpu_seconds,
          memory_gb_seconds: sample.memory_gb_seconds,
          sandbox_seconds: sample.interval_seconds,
          disk_bytes_peak: sample.disk_bytes ?? 0,
          net_rx_bytes: sample.net_rx_bytes,
          net_tx_bytes: sample.net_tx_bytes,
        })
        .onConflict((oc) =>
          oc.columns(['sandbox_id', 'hour']).doUpdateSet({
            cpu_seconds: sql`usage_hours.cpu_seconds + excluded.cpu_seconds`,
            memory_gb_seconds: sql`usage_hours.memory_gb_seconds + excluded.memory_gb_seconds`,
            sandbox_seconds: sql`usage_hours.sandbox_seconds + excluded.sandbox_seconds`,
            disk_bytes_peak: greatest(
              tx,
              'usage_hours.disk_bytes_peak',
              'excluded.disk_bytes_peak',
            ),
            net_rx_bytes: sql`usage_hours.net_rx_bytes + excluded.net_rx_bytes`,
            net_tx_bytes: sql`usage_hours.net_tx_bytes + excluded.net_tx_bytes`,
          }),
        )
        .execute();
      const { sandbox_id, ...rest } = sandbox;
      await tx
        .insertInto('usage_sandboxes')
        .values(sandbox)
        .onConflict((oc) => oc.column('sandbox_id').doUpdateSet(rest))
        .execute();
    });
  }

  /** A sandbox's samples with `since < at <= until`, oldest first. */
  async samples(sandboxId: string, since: string, until: string): Promise<UsageSampleRow[]> {
    return this.db
      .selectFrom('usage_samples')
      .select([
        'sandbox_id',
        'at',
        'interval_seconds',
        'cpu_seconds',
        'memory_bytes',
        'memory_gb_seconds',
        'disk_bytes',
        'net_rx_bytes',
        'net_tx_bytes',
      ])
      .where('sandbox_id', '=', sandboxId)
      .where('at', '>', since)
      .where('at', '<=', until)
      .orderBy('at')
      .execute();
  }

  /** Per sandbox (of one organisation, or all), the samples with `from < at <= to` added up. */
  async sampleFigures(from: string, to: string, orgId: string | null): Promise<SandboxFigures[]> {
    let q = this.db
      .selectFrom('usage_samples as s')
      .innerJoin('usage_sandboxes as u', 'u.sandbox_id', 's.sandbox_id')
      .where('s.at', '>', from)
      .where('s.at', '<=', to);
    if (orgId !== null) q = q.where('u.org_id', '=', orgId);
    const rows = await q
      .select((eb) => [
        's.sandbox_id as sandbox_id',
        eb.fn.sum<number>('s.cpu_seconds').as('cpu_seconds'),
        eb.fn.sum<number>('s.memory_gb_seconds').as('memory_gb_seconds'),
        eb.fn.sum<number>('s.interval_seconds').as('sandbox_seconds'),
        eb.fn.max<number | null>('s.disk_bytes').as('disk_bytes_peak'),
        eb.fn.sum<number>('s.net_rx_bytes').as('net_rx_bytes'),
        eb.fn.sum<number>('s.net_tx_bytes').as('net_tx_bytes'),
      ])
      .groupBy('s.sandbox_id')
      .execute();
    return rows.map((r) => ({ ...r, disk_bytes_peak: r.disk_bytes_peak ?? 0 }));
  }

  /** Per sandbox, the hours with `fromHour <= hour < toHour` added up. */
  async hourFigures(
    fromHour: string,
    toHour: string,
    orgId: string | null,
  ): Promise<SandboxFigures[]> {
    let q = this.db
      .selectFrom('usage_hours as h')
      .innerJoin('usage_sandboxes as u', 'u.sandbox_id', 'h.sandbox_id')
      .where('h.hour', '>=', fromHour)
      .where('h.hour', '<', toHour);
    if (orgId !== null) q = q.where('u.org_id', '=', orgId);
    return q
      .select((eb) => [
        'h.sandbox_id as sandbox_id',
        eb.fn.sum<number>('h.cpu_seconds').as('cpu_seconds'),
        eb.fn.sum<number>('h.memory_gb_seconds').as('memory_gb_seconds'),
        eb.fn.sum<number>('h.sandbox_seconds').as('sandbox_seconds'),
        eb.fn.max<number>('h.disk_bytes_peak').as('disk_bytes_peak'),
        eb.fn.sum<number>('h.net_rx_bytes').as('net_rx_bytes'),
        eb.fn.sum<number>('h.net_tx_bytes').as('net_tx_bytes'),
      ])
      .groupBy('h.sandbox_id')
      .execute();
  }

  async sandboxes(ids: string[]): Promise<UsageSandboxRow[]> {
    if (ids.length === 0) return [];
    return this.db
      .selectFrom('usage_sandboxes')
      .selectAll()
      .where('sandbox_id', 'in', ids)
      .execute();
  }

  /** Removes samples older than `before`; their hours stay. */
  async prune(before: string): Promise<void> {
    await this.db.deleteFrom('usage_samples').where('at', '<', before).execute();
  }
}
