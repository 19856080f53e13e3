/**
 * Migration 0011: usage. Samples of each live sandbox (pruned after the
 * retention period), usage per sandbox and hour (kept), and what each sampled
 * sandbox is known by, kept when its record is purged.
 */
import type { Kysely, Migration } from 'kysely';
import { columnTypes } from './dialect';

export const usageMigration: Migration = {
  async up(db: Kysely<unknown>) {
    const t = columnTypes(db);
    await db.schema
      .createTable('usage_sandboxes')
      .addColumn('sandbox_id', t.text, (c) => c.primaryKey())
      .addColumn('org_id', t.text, (c) => c.notNull())
      .addColumn('template', t.text, (c) => c.notNull())
      .addColumn('labels', t.text, (c) => c.notNull().defaultTo('{}'))
      .addColumn('last_at', t.text, (c) => c.notNull())
      .addColumn('last_started_at', t.text, (c) => c.notNull())
      .addColumn('last_cpu_seconds', t.real, (c) => c.notNull())
      .addColumn('last_memory_bytes', t.int, (c) => c.notNull())
      .addColumn('last_net_rx_bytes', t.int, (c) => c.notNull())
      .addColumn('last_net_tx_bytes', t.int, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('usage_sandboxes_org')
      .on('usage_sandboxes')
      .column('org_id')
      .execute();
    await db.schema
      .createTable('usage_samples')
      .addColumn('id', t.int, t.serial)
      .addColumn('sandbox_id', t.text, (c) => c.notNull())
      .addColumn('at', t.text, (c) => c.notNull())
      .addColumn('interval_seconds', t.real, (c) => c.notNull())
      .addColumn('cpu_seconds', t.real, (c) => c.notNull())
      .addColumn('memory_bytes', t.int, (c) => c.notNull())
      .addColumn('memory_gb_seconds', t.real, (c) => c.notNull())
      .addColumn('disk_bytes', t.int)
      .addColumn('net_rx_bytes', t.int, (c) => c.notNull())
      .addColumn('net_tx_bytes', t.int, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('usage_samples_sandbox_at')
      .on('usage_samples')
      .columns(['sandbox_id', 'at'])
      .execute();
    await db.schema.createIndex('usage_samples_at').on('usage_samples').column('at').execute();
    await db.schema
      .createTable('usage_hours')
      .addColumn('sandbox_id', t.text, (c) => c.notNull())
      .addColumn('hour', t.text, (c) => c.notNull())
      .addColumn('cpu_seconds', t.real, (c) => c.notNull())
      .addColumn('memory_gb_seconds', t.real, (c) => c.notNull())
      .addColumn('sandbox_seconds', t.real, (c) => c.notNull())
      .addColumn('disk_bytes_peak', t.int, (c) => c.notNull())
      .addColumn('net_rx_bytes', t.int, (c) => c.notNull())
      .addColumn('net_tx_bytes', t.int, (c) => c.notNull())
      .addPrimaryKeyConstraint('usage_hours_pk', ['sandbox_id', 'hour'])
      .execute();
    await db.schema.createIndex('usage_hours_hour').on('usage_hours').column('hour').execute();
  },
};
