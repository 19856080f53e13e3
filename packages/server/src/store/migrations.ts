/**
 * Schema migrations, applied in order by Kysely's Migrator. Written with the
 * schema builder so the PostgreSQL store (multi-node) can run the same ones.
 * Every resource table has org_id: tenancy is a filter, never a migration.
 */
import type { Kysely, Migration } from 'kysely';
import { usageMigration } from './migration-usage';

export const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('organisations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('api_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organisations.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema
        .createTable('sandboxes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organisations.id'))
        .addColumn('host_id', 'text', (c) => c.notNull())
        .addColumn('template', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('cpu', 'real', (c) => c.notNull())
        .addColumn('memory_mb', 'integer', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('env', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('ttl_seconds', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_activity_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('stopped_at', 'text')
        .addColumn('stop_reason', 'text')
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
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('sandbox_id', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('from_state', 'text')
        .addColumn('to_state', 'text', (c) => c.notNull())
        .addColumn('cause', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('sandbox_events_sandbox')
        .on('sandbox_events')
        .column('sandbox_id')
        .execute();
      await db.schema
        .createTable('audit_events')
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('org_id', 'text')
        .addColumn('actor', 'text')
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('resource_type', 'text')
        .addColumn('resource_id', 'text')
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('error_code', 'text')
        .addColumn('request_id', 'text', (c) => c.notNull())
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
      await db.schema
        .createTable('snapshots')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organisations.id'))
        .addColumn('host_id', 'text', (c) => c.notNull())
        .addColumn('sandbox_id', 'text', (c) => c.notNull())
        .addColumn('template', 'text', (c) => c.notNull())
        .addColumn('cpu', 'real', (c) => c.notNull())
        .addColumn('memory_mb', 'integer', (c) => c.notNull())
        .addColumn('env', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('size_bytes', 'integer', (c) => c.notNull())
        .addColumn('parent_pause_ms', 'real', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.alterTable('sandboxes').addColumn('parent_id', 'text').execute();
      await db.schema.alterTable('sandboxes').addColumn('snapshot_id', 'text').execute();
    },
  },
  '0003_lifecycle': {
    async up(db: Kysely<unknown>) {
      const add = (name: string, type: 'text' | 'integer', def: string | number) =>
        db.schema
          .alterTable('sandboxes')
          .addColumn(name, type, (c) => c.notNull().defaultTo(def))
          .execute();
      await add('lineage', 'text', '[]');
      await add('persistent', 'integer', 0);
      await add('idle_timeout_seconds', 'integer', 300);
      await add('fork_kind', 'text', '');
      await db.schema
        .alterTable('snapshots')
        .addColumn('lineage', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
    },
  },
  '0004_preview_urls': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('sandboxes')
        .addColumn('preview_auth', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('sandboxes').addColumn('preview_token_hash', 'text').execute();
    },
  },
  '0005_network': {
    async up(db: Kysely<unknown>) {
      // JSON {policy, secrets}; secrets are as sensitive as env, and kept the same way.
      await db.schema.alterTable('sandboxes').addColumn('network', 'text').execute();
      await db.schema.alterTable('snapshots').addColumn('network', 'text').execute();
      await db.schema
        .createTable('egress_events')
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('sandbox_id', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('protocol', 'text', (c) => c.notNull())
        .addColumn('host', 'text', (c) => c.notNull())
        .addColumn('port', 'integer', (c) => c.notNull())
        .addColumn('address', 'text')
        .addColumn('decision', 'text', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('bytes_out', 'integer', (c) => c.notNull())
        .addColumn('bytes_in', 'integer', (c) => c.notNull())
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
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
      await db.schema
        .createTable('volumes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organisations.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('host_id', 'text', (c) => c.notNull())
        .addColumn('size_mb', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('volumes_org_name', ['org_id', 'name'])
        .execute();
      await db.schema
        .createTable('volume_attachments')
        .addColumn('volume_id', 'text', (c) => c.notNull())
        .addColumn('sandbox_id', 'text', (c) => c.notNull())
        .addColumn('mount_path', 'text', (c) => c.notNull())
        .addColumn('read_only', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('volume_attachments_pk', ['volume_id', 'sandbox_id'])
        .execute();
      await db.schema
        .createIndex('volume_attachments_sandbox')
        .on('volume_attachments')
        .column('sandbox_id')
        .execute();
      await db.schema.alterTable('sandboxes').addColumn('disk_mb', 'integer').execute();
      await db.schema.alterTable('snapshots').addColumn('disk_mb', 'integer').execute();
      await db.schema
        .alterTable('sandboxes')
        .addColumn('volumes', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
    },
  },
  '0007_databases': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('databases')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organisations.id'))
        .addColumn('label', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('host_id', 'text', (c) => c.notNull())
        .addColumn('sandbox_id', 'text', (c) => c.notNull())
        .addColumn('volume_id', 'text', (c) => c.notNull())
        .addColumn('cpu', 'real', (c) => c.notNull())
        .addColumn('memory_mb', 'integer', (c) => c.notNull())
        .addColumn('disk_mb', 'integer', (c) => c.notNull())
        // As sensitive as a sandbox's env, and kept the same way.
        .addColumn('password', 'text', (c) => c.notNull())
        .addColumn('scale_to_zero_seconds', 'integer', (c) => c.notNull())
        .addColumn('archive_timeout_seconds', 'integer', (c) => c.notNull())
        .addColumn('epoch', 'integer', (c) => c.notNull())
        .addColumn('parent_id', 'text')
        .addColumn('restored_to', 'text')
        .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_archived_wal', 'text')
        .addColumn('last_archived_at', 'text')
        .addColumn('last_base_backup_at', 'text')
        .addColumn('last_base_backup_lsn', 'text')
        .addColumn('last_connection_at', 'text')
        .execute();
      await db.schema
        .createTable('database_events')
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('database_id', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('database_events_database')
        .on('database_events')
        .columns(['database_id', 'id'])
        .execute();
      await db.schema
        .createTable('database_backups')
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('database_id', 'text', (c) => c.notNull())
        .addColumn('epoch', 'integer', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('start_lsn', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .execute();
    },
  },
  '0008_keys': {
    async up(db: Kysely<unknown>) {
      // Tokens from before keys keep full rights: the admin token is the only one.
      await db.schema
        .alterTable('api_tokens')
        .addColumn('scopes', 'text', (c) => c.notNull().defaultTo('["admin"]'))
        .execute();
      await db.schema.alterTable('api_tokens').addColumn('prefix', 'text').execute();
      await db.schema.alterTable('api_tokens').addColumn('sandbox_id', 'text').execute();
      await db.schema.alterTable('api_tokens').addColumn('sandbox_labels', 'text').execute();
      await db.schema.alterTable('api_tokens').addColumn('expires_at', 'text').execute();
      await db.schema.alterTable('api_tokens').addColumn('created_by', 'text').execute();
      // Templates built through the API belong to the builder's organisation; others are official.
      await db.schema
        .createTable('template_owners')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0009_webhooks': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organisations.id'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('events', 'text', (c) => c.notNull().defaultTo('["*"]'))
        // The signing secret: needed in clear to sign, so kept like a sandbox's env.
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('previous_secret', 'text')
        .addColumn('previous_secret_expires_at', 'text')
        .addColumn('disabled_at', 'text')
        .addColumn('disabled_reason', 'text')
        .addColumn('failing_since', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('webhook_endpoints_org')
        .on('webhook_endpoints')
        .columns(['org_id', 'created_at'])
        .execute();
      // The outbox: one row per (event, endpoint), written when the event happens.
      await db.schema
        .createTable('webhook_outbox')
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('endpoint_id', 'text', (c) => c.notNull())
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
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
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('endpoint_id', 'text', (c) => c.notNull())
        .addColumn('outbox_id', 'integer', (c) => c.notNull())
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('status_code', 'integer')
        .addColumn('latency_ms', 'integer', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('at', 'text', (c) => c.notNull())
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
      await db.schema
        .createTable('org_quotas')
        .addColumn('org_id', 'text', (c) => c.primaryKey())
        .addColumn('overrides', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0011_usage': usageMigration,
};
