/**
 * Migration 0012: hosts. One row per host agent that joined the control
 * plane (the credential it shares with the control plane, its lease and the epoch it owns its work
 * under), and the one-use join tokens an admin makes for new agents.
 */
import type { Kysely, Migration } from 'kysely';
import { columnTypes } from './dialect';

export const hostsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    const t = columnTypes(db);
    await db.schema
      .createTable('hosts')
      .addColumn('id', t.text, (c) => c.primaryKey())
      .addColumn('url', t.text, (c) => c.notNull())
      .addColumn('credential', t.text, (c) => c.notNull())
      .addColumn('state', t.text, (c) => c.notNull())
      .addColumn('epoch', t.int, (c) => c.notNull())
      .addColumn('lease_expires_at', t.int, (c) => c.notNull())
      .addColumn('joined_at', t.text, (c) => c.notNull())
      .addColumn('last_heartbeat_at', t.text)
      .addColumn('capacity', t.text, (c) => c.notNull().defaultTo('{}'))
      .addColumn('info', t.text, (c) => c.notNull().defaultTo('{}'))
      .addColumn('state_reason', t.text, (c) => c.notNull().defaultTo(''))
      .execute();
    await db.schema
      .createTable('host_join_tokens')
      .addColumn('token_hash', t.text, (c) => c.primaryKey())
      .addColumn('created_at', t.text, (c) => c.notNull())
      .addColumn('expires_at', t.int, (c) => c.notNull())
      .addColumn('used_at', t.text)
      .addColumn('host_id', t.text)
      .execute();
  },
};
