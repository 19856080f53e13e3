/** The opt-in tool groups: snapshots (snapshot, fork, restore), databases and templates. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Database as DatabaseInfo } from '@warren/protocol';
import { z } from 'zod';
import type { ConnectionOptions } from '../config';
import { Database } from '../databases';
import { Sandbox } from '../sandbox';
import { listTemplates } from '../templates';
import { labels, sandboxId, sandboxSummary, ttlSeconds } from './describe';
import { guarded, ok } from './result';

export function registerSnapshotTools(server: McpServer, conn: ConnectionOptions): void {
  server.registerTool(
    'snapshot_sandbox',
    {
      description:
        "Capture a running sandbox's memory, processes and files; the sandbox goes on running. Returns JSON {id (the snapshot id, for restore_snapshot), sandbox_id, size_bytes, parent_pause_ms (how long the sandbox was held, ms), created_at}.",
      inputSchema: { sandbox_id: sandboxId },
    },
    (args) =>
      guarded(async () => {
        const sbx = await Sandbox.connect(args.sandbox_id, conn);
        const s = await sbx.snapshot();
        return ok({
          id: s.id,
          sandbox_id: s.sandbox_id,
          size_bytes: s.size_bytes,
          parent_pause_ms: s.parent_pause_ms,
          created_at: s.created_at,
        });
      }),
  );

  server.registerTool(
    'fork_sandbox',
    {
      description:
        "Make a new sandbox with a copy of this sandbox's files, started fresh (no processes carried over). The original is unchanged. Returns the new sandbox as JSON (its `id`, state, parent_id, ...).",
      inputSchema: {
        sandbox_id: sandboxId,
        ttl_seconds: ttlSeconds.optional(),
        labels: labels.optional(),
      },
    },
    (args) =>
      guarded(async () => {
        const sbx = await Sandbox.connect(args.sandbox_id, conn);
        const child = await sbx.fork({ ttlSeconds: args.ttl_seconds, metadata: args.labels });
        return ok(sandboxSummary(child.info));
      }),
  );

  server.registerTool(
    'restore_snapshot',
    {
      description:
        'Start a new sandbox that continues from a snapshot (its memory, running processes and files as captured). Returns the new sandbox as JSON (its `id`, state, snapshot_id, ...).',
      inputSchema: {
        snapshot_id: z
          .string()
          .min(1)
          .describe('Snapshot id from snapshot_sandbox, e.g. "snap_0123456789abcdef".'),
        ttl_seconds: ttlSeconds.optional(),
        labels: labels.optional(),
      },
    },
    (args) =>
      guarded(async () => {
        const sbx = await Sandbox.create({
          ...conn,
          fromSnapshot: args.snapshot_id,
          ttlSeconds: args.ttl_seconds,
          metadata: args.labels,
        });
        return ok(sandboxSummary(sbx.info));
      }),
  );
}

const databaseId = z.string().min(1).describe('Database id, e.g. "db_0123456789abcdef".');

function databaseSummary(d: DatabaseInfo): Record<string, unknown> {
  const { id, label, state, version, cpu, memory_mb, disk_mb, created_at } = d;
  return { id, label, state, version, cpu, memory_mb, disk_mb, created_at };
}

export function registerDatabaseTools(server: McpServer, conn: ConnectionOptions): void {
  server.registerTool(
    'create_database',
    {
      description:
        'Create a managed PostgreSQL 17 database and wait until it accepts connections. Returns JSON {id, label, state, version, cpu, memory_mb, disk_mb, connection_url, pooled_url}; the URLs hold the password.',
      inputSchema: {
        label: z.string().min(1).max(63).describe('A name for the database, e.g. "orders".'),
        memory_mb: z
          .number()
          .int()
          .min(128)
          .max(4096)
          .optional()
          .describe('Memory limit in MiB. Default 1024.'),
        disk_mb: z
          .number()
          .int()
          .min(128)
          .optional()
          .describe('Size of the data volume in MiB. Default 1024.'),
      },
    },
    (args) =>
      guarded(async () => {
        const d = await Database.create(
          { label: args.label, memory_mb: args.memory_mb, disk_mb: args.disk_mb },
          conn,
        );
        return ok({
          ...databaseSummary(d),
          connection_url: d.connection_url,
          pooled_url: d.pooled_url,
        });
      }),
  );

  server.registerTool(
    'list_databases',
    {
      description:
        'List the managed databases this API key can see. Returns a JSON array of {id, label, state, version, cpu, memory_mb, disk_mb, created_at} (no passwords; use get_database_url).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    () => guarded(async () => ok((await Database.list(conn)).map(databaseSummary))),
  );

  server.registerTool(
    'get_database_url',
    {
      description:
        'The connection URLs of a database. Returns JSON {connection_url (direct to Postgres, TLS), pooled_url (through PgBouncer, transaction mode), state}. The URLs hold the password.',
      inputSchema: { database_id: databaseId },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const d = await Database.get(args.database_id, conn);
        return ok({ connection_url: d.connection_url, pooled_url: d.pooled_url, state: d.state });
      }),
  );

  server.registerTool(
    'delete_database',
    {
      description: 'Delete a database and its data for good. Returns "deleted <id>".',
      inputSchema: { database_id: databaseId },
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    (args) =>
      guarded(async () => {
        await Database.delete(args.database_id, conn);
        return ok(`deleted ${args.database_id}`);
      }),
  );
}

export function registerTemplateTools(server: McpServer, conn: ConnectionOptions): void {
  server.registerTool(
    'list_templates',
    {
      description:
        'List the templates sandboxes can be created from (the `template` of create_sandbox). Returns a JSON array of {name, state, default_cpu, default_memory_mb, max_cpu, max_memory_mb, default_disk_mb, max_disk_mb, source}; memory and disk in MiB.',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    () =>
      guarded(async () => {
        const items = await listTemplates(conn);
        return ok(
          items.map((t) => ({
            name: t.name,
            state: t.state,
            default_cpu: t.default_cpu,
            default_memory_mb: t.default_memory_mb,
            max_cpu: t.max_cpu,
            max_memory_mb: t.max_memory_mb,
            default_disk_mb: t.default_disk_mb,
            max_disk_mb: t.max_disk_mb,
            source: t.source ?? 'builtin',
          })),
        );
      }),
  );
}
