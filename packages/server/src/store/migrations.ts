/**
 * Schema migrations, applied in order by Kysely's Migrator. Written with the
 * schema builder and the column types of ./dialect.ts, so SQLite and
 * PostgreSQL run the same ones. Every resource table has org_id: tenancy is a
 * filter, never a migration.
 */
import type { Kysely, Migration } from 'kysely';
import { columnTypes, type DataTypeExpression } from './dialect';
import { hostsMigration } from './migration-hosts';
import { usageMigration } from './migration-usage';

export const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      await db.schema
        .createTable('organisations')
        .addColumn('id', t.text, (c) => c.primaryKey())
        .addColumn('name', t.text, (c) => c.notNull())
        .addColumn('created_at', t.text, (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('api_tokens')
        .addColumn('id', t.text, (c) => c.primaryKey())
        .addColumn('org_id', t.text, (c) => c.notNull().references('organisations.id'))
        .addColumn('name', t.text, (c) => c.notNull())
        .addColumn('token_hash', t.text, (c) => c.notNull().unique())
        .addColumn('created_at', t.text, (c) => c.notNull())
        .addColumn('last_used_at', t.text)
        .addColumn('revoked_at', t.text)
        .execute();
      await db.schema
        .createTable('sandboxes')
        .addColumn('id', t.text, (c) => c.primaryKey())
        .addColumn('org_id', t.text, (c) => c.notNull().references('organisations.id'))
        .addColumn('host_id', t.text, (c) => c.notNull())
        .addColumn('template', t.text, (c) => c.notNull())
        .addColumn('state', t.text, (c) => c.notNull())
        .addColumn('cpu', t.real, (c) => c.notNull())
        .addColumn('memory_mb', t.int, (c) => c.notNull())
        .addColumn('metadata', t.text, (c) => c.notNull().defaultTo('{}'))
        .addColumn('env', t.text, (c) => c.notNull().defaultTo('{}'))
        .addColumn('ttl_seconds', t.int, (c) => c.notNull())
        .addColumn('created_at', t.text, (c) => c.notNull())
        .addColumn('last_activity_at', t.text, (c) => c.notNull())
        .addColumn('expires_at', t.text, (c) => c.notNull())
        .addColumn('stopped_at', t.text)
        .addColumn('stop_reason', t.text)
        .execute();
      await db.schema
        .createIndex('sandboxes_org_created')
        .on('sandboxes')
        .columns(['org_id', 'created_at', 'id'])
        .execute();
      await db.schema
        .createIndex('sandboxes_state_expires')
        .on('sandboxes')
        .columns(['state', 'expires_at'])
        .execute();
      await db.schema
        .createTable('sandbox_events')
        .addColumn('id', t.int, t.serial)
        .addColumn('sandbox_id', t.text, (c) => c.notNull())
        .addColumn('at', t.text, (c) => c.notNull())
        .addColumn('from_state', t.text)
        .addColumn('to_state', t.text, (c) => c.notNull())
        .addColumn('cause', t.text, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('sandbox_events_sandbox')
        .on('sandbox_events')
        .column('sandbox_id')
        .execute();
      await db.schema
        .createTable('audit_events')
        .addColumn('id', t.int, t.serial)
        .addColumn('at', t.text, (c) => c.notNull())
        .addColumn('org_id', t.text)
        .addColumn('actor', t.text)
        .addColumn('action', t.text, (c) => c.notNull())
        .addColumn('resource_type', t.text)
        .addColumn('resource_id', t.text)
        .addColumn('status', t.int, (c) => c.notNull())
        .addColumn('error_code', t.text)
        .addColumn('request_id', t.text, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('audit_events_org_at')
        .on('audit_events')
        .columns(['org_id', 'at'])
        .execute();
    },
  },
  '0002_snapshots': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      await db.schema
        .createTable('snapshots')
        .addColumn('id', t.text, (c) => c.primaryKey())
        .addColumn('org_id', t.text, (c) => c.notNull().references('organisations.id'))
        .addColumn('host_id', t.text, (c) => c.notNull())
        .addColumn('sandbox_id', t.text, (c) => c.notNull())
        .addColumn('template', t.text, (c) => c.notNull())
        .addColumn('cpu', t.real, (c) => c.notNull())
        .addColumn('memory_mb', t.int, (c) => c.notNull())
        .addColumn('env', t.text, (c) => c.notNull().defaultTo('{}'))
        .addColumn('size_bytes', t.int, (c) => c.notNull())
        .addColumn('parent_pause_ms', t.real, (c) => c.notNull())
        .addColumn('created_at', t.text, (c) => c.notNull())
        .execute();
      await db.schema.alterTable('sandboxes').addColumn('parent_id', t.text).execute();
      await db.schema.alterTable('sandboxes').addColumn('snapshot_id', t.text).execute();
    },
  },
  '0003_lifecycle': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      const add = (name: string, type: DataTypeExpression, def: string | number) =>
        db.schema
          .alterTable('sandboxes')
          .addColumn(name, type, (c) => c.notNull().defaultTo(def))
          .execute();
      await add('lineage', t.text, '[]');
      await add('persistent', t.int, 0);
      await add('idle_timeout_seconds', t.int, 300);
      await add('fork_kind', t.text, '');
      await db.schema
        .alterTable('snapshots')
        .addColumn('lineage', t.text, (c) => c.notNull().defaultTo('[]'))
        .execute();
    },
  },
  '0004_preview_urls': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      await db.schema
        .alterTable('sandboxes')
        .addColumn('preview_auth', t.int, (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('sandboxes').addColumn('preview_token_hash', t.text).execute();
    },
  },
  '0005_network': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      // JSON {policy, secrets}; secrets are as sensitive as env, and kept the same way.
      await db.schema.alterTable('sandboxes').addColumn('network', t.text).execute();
      await db.schema.alterTable('snapshots').addColumn('network', t.text).execute();
      await db.schema
        .createTable('egress_events')
        .addColumn('id', t.int, t.serial)
        .addColumn('sandbox_id', t.text, (c) => c.notNull())
        .addColumn('at', t.text, (c) => c.notNull())
        .addColumn('protocol', t.text, (c) => c.notNull())
        .addColumn('host', t.text, (c) => c.notNull())
        .addColumn('port', t.int, (c) => c.notNull())
        .addColumn('address', t.text)
        .addColumn('decision', t.text, (c) => c.notNull())
        .addColumn('reason', t.text, (c) => c.notNull())
        .addColumn('bytes_out', t.int, (c) => c.notNull())
        .addColumn('bytes_in', t.int, (c) => c.notNull())
        .addColumn('duration_ms', t.int, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('egress_events_sandbox')
        .on('egress_events')
        .columns(['sandbox_id', 'id'])
        .execute();
    },
  },
  '0006_volumes': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      await db.schema
        .createTable('volumes')
        .addColumn('id', t.text, (c) => c.primaryKey())
        .addColumn('org_id', t.text, (c) => c.notNull().references('organisations.id'))
        .addColumn('name', t.text, (c) => c.notNull())
        .addColumn('host_id', t.text, (c) => c.notNull())
        .addColumn('size_mb', t.int, (c) => c.notNull())
        .addColumn('created_at', t.text, (c) => c.notNull())
        .addUniqueConstraint('volumes_org_name', ['org_id', 'name'])
        .execute();
      await db.schema
        .createTable('volume_attachments')
        .addColumn('volume_id', t.text, (c) => c.notNull())
        .addColumn('sandbox_id', t.text, (c) => c.notNull())
        .addColumn('mount_path', t.text, (c) => c.notNull())
        .addColumn('read_only', t.int, (c) => c.notNull())
        .addColumn('created_at', t.text, (c) => c.notNull())
        .addPrimaryKeyConstraint('volume_attachments_pk', ['volume_id', 'sandbox_id'])
        .execute();
      await db.schema
        .createIndex('volume_attachments_sandbox')
        .on('volume_attachments')
        .column('sandbox_id')
        .execute();
      await db.schema.alterTable('sandboxes').addColumn('disk_mb', t.int).execute();
      await db.schema.alterTable('snapshots').addColumn('disk_mb', t.int).execute();
      await db.schema
        .alterTable('sandboxes')
        .addColumn('volumes', t.text, (c) => c.notNull().defaultTo('[]'))
        .execute();
    },
  },
  '0007_databases': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      await db.schema
        .createTable('databases')
        .addColumn('id', t.text, (c) => c.primaryKey())
        .addColumn('org_id', t.text, (c) => c.notNull().references('organisations.id'))
        .addColumn('label', t.text, (c) => c.notNull())
        .addColumn('state', t.text, (c) => c.notNull())
        .addColumn('host_id', t.text, (c) => c.notNull())
        .addColumn('sandbox_id', t.text, (c) => c.notNull())
        .addColumn('volume_id', t.text, (c) => c.notNull())
        .addColumn('cpu', t.real, (c) => c.notNull())
        .addColumn('memory_mb', t.int, (c) => c.notNull())
        .addColumn('disk_mb', t.int, (c) => c.notNull())
        // As sensitive as a sandbox's env, and kept the same way.
        .addColumn('password', t.text, (c) => c.notNull())
        .addColumn('scale_to_zero_seconds', t.int, (c) => c.notNull())
        .addColumn('archive_timeout_seconds', t.int, (c) => c.notNull())
        .addColumn('epoch', t.int, (c) => c.notNull())
        .addColumn('parent_id', t.text)
        .addColumn('restored_to', t.text)
        .addColumn('metadata', t.text, (c) => c.notNull().defaultTo('{}'))
        .addColumn('created_at', t.text, (c) => c.notNull())
        .addColumn('last_archived_wal', t.text)
        .addColumn('last_archived_at', t.text)
        .addColumn('last_base_backup_at', t.text)
        .addColumn('last_base_backup_lsn', t.text)
        .addColumn('last_connection_at', t.text)
        .execute();
      await db.schema
        .createTable('database_events')
        .addColumn('id', t.int, t.serial)
        .addColumn('database_id', t.text, (c) => c.notNull())
        .addColumn('at', t.text, (c) => c.notNull())
        .addColumn('kind', t.text, (c) => c.notNull())
        .addColumn('message', t.text, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('database_events_database')
        .on('database_events')
        .columns(['database_id', 'id'])
        .execute();
      await db.schema
        .createTable('database_backups')
        .addColumn('id', t.int, t.serial)
        .addColumn('database_id', t.text, (c) => c.notNull())
        .addColumn('epoch', t.int, (c) => c.notNull())
        .addColumn('key', t.text, (c) => c.notNull())
        .addColumn('start_lsn', t.text, (c) => c.notNull())
        .addColumn('at', t.text, (c) => c.notNull())
        .addColumn('size', t.int, (c) => c.notNull())
        .execute();
    },
  },
  '0008_keys': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      // Tokens from before keys keep full rights: the admin token is the only one.
      await db.schema
        .alterTable('api_tokens')
        .addColumn('scopes', t.text, (c) => c.notNull().defaultTo('["admin"]'))
        .execute();
      await db.schema.alterTable('api_tokens').addColumn('prefix', t.text).execute();
      await db.schema.alterTable('api_tokens').addColumn('sandbox_id', t.text).execute();
      await db.schema.alterTable('api_tokens').addColumn('sandbox_labels', t.text).execute();
      await db.schema.alterTable('api_tokens').addColumn('expires_at', t.text).execute();
      await db.schema.alterTable('api_tokens').addColumn('created_by', t.text).execute();
      // Templates built through the API belong to the builder's organisation; others are official.
      await db.schema
        .createTable('template_owners')
        .addColumn('name', t.text, (c) => c.primaryKey())
        .addColumn('org_id', t.text, (c) => c.notNull())
        .addColumn('created_at', t.text, (c) => c.notNull())
        .execute();
    },
  },
  '0009_webhooks': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', t.text, (c) => c.primaryKey())
        .addColumn('org_id', t.text, (c) => c.notNull().references('organisations.id'))
        .addColumn('url', t.text, (c) => c.notNull())
        .addColumn('description', t.text, (c) => c.notNull().defaultTo(''))
        .addColumn('events', t.text, (c) => c.notNull().defaultTo('["*"]'))
        // The signing secret: needed in clear to sign, so kept like a sandbox's env.
        .addColumn('secret', t.text, (c) => c.notNull())
        .addColumn('previous_secret', t.text)
        .addColumn('previous_secret_expires_at', t.text)
        .addColumn('disabled_at', t.text)
        .addColumn('disabled_reason', t.text)
        .addColumn('failing_since', t.text)
        .addColumn('created_at', t.text, (c) => c.notNull())
        .addColumn('updated_at', t.text, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('webhook_endpoints_org')
        .on('webhook_endpoints')
        .columns(['org_id', 'created_at'])
        .execute();
      // The outbox: one row per (event, endpoint), written when the event happens.
      await db.schema
        .createTable('webhook_outbox')
        .addColumn('id', t.int, t.serial)
        .addColumn('endpoint_id', t.text, (c) => c.notNull())
        .addColumn('message_id', t.text, (c) => c.notNull())
        .addColumn('event_type', t.text, (c) => c.notNull())
        .addColumn('payload', t.text, (c) => c.notNull())
        .addColumn('state', t.text, (c) => c.notNull())
        .addColumn('attempts', t.int, (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', t.int, (c) => c.notNull())
        .addColumn('created_at', t.text, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('webhook_outbox_due')
        .on('webhook_outbox')
        .columns(['state', 'next_attempt_at'])
        .execute();
      await db.schema
        .createIndex('webhook_outbox_message')
        .on('webhook_outbox')
        .columns(['endpoint_id', 'message_id'])
        .execute();
      await db.schema
        .createTable('webhook_attempts')
        .addColumn('id', t.int, t.serial)
        .addColumn('endpoint_id', t.text, (c) => c.notNull())
        .addColumn('outbox_id', t.int, (c) => c.notNull())
        .addColumn('message_id', t.text, (c) => c.notNull())
        .addColumn('event_type', t.text, (c) => c.notNull())
        .addColumn('attempt', t.int, (c) => c.notNull())
        .addColumn('status_code', t.int)
        .addColumn('latency_ms', t.int, (c) => c.notNull())
        .addColumn('response', t.text, (c) => c.notNull())
        .addColumn('error', t.text)
        .addColumn('at', t.text, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('webhook_attempts_endpoint')
        .on('webhook_attempts')
        .columns(['endpoint_id', 'id'])
        .execute();
    },
  },
  '0010_quotas': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      await db.schema
        .createTable('org_quotas')
        .addColumn('org_id', t.text, (c) => c.primaryKey())
        .addColumn('overrides', t.text, (c) => c.notNull())
        .addColumn('updated_at', t.text, (c) => c.notNull())
        .execute();
    },
  },
  '0011_usage': usageMigration,
  '0012_hosts': hostsMigration,
  '0013_hibernation_images': {
    async up(db: Kysely<unknown>) {
      const t = columnTypes(db);
      await db.schema.alterTable('sandboxes').addColumn('image_id', t.text).execute();
    },
  },
};
