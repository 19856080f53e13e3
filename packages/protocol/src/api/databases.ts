/** REST schemas of managed PostgreSQL databases: create, the record, restore, branches, events. */
import { Type, type Static } from '@sinclair/typebox';
import { Labels } from './common';
import { Strict } from './strict';

export const DatabaseState = Type.Union(
  [
    Type.Literal('creating'),
    Type.Literal('ready'),
    Type.Literal('hibernated'),
    Type.Literal('recovering'),
    Type.Literal('failed'),
  ],
  {
    description:
      '`ready`: accepts connections. `hibernated`: scaled to zero, woken by the next connection. `recovering`: its sandbox died and is being started again on the same volume. `failed`: could not be recovered (see events).',
  },
);
export type DatabaseState = Static<typeof DatabaseState>;

const Label = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[A-Za-z0-9][A-Za-z0-9 ._-]*$',
  description: 'A name for people: letters, digits, space, `.`, `_` and `-`.',
});

const Sizing = {
  cpu: Type.Optional(
    Type.Number({ minimum: 0.25, maximum: 64, description: 'vCPUs. Default 1, at most 2.' }),
  ),
  memory_mb: Type.Optional(
    Type.Integer({
      minimum: 256,
      maximum: 1024 * 1024,
      description: 'Memory limit in MiB. Default 1024, at most 4096.',
    }),
  ),
};

const ScaleToZero = Type.Integer({
  minimum: 0,
  maximum: 7 * 24 * 3600,
  description:
    'Hibernate after this many seconds without a client connection (0: never). A connection to a hibernated database wakes it. Default 0.',
});

export const CreateDatabaseRequest = Type.Object(
  {
    label: Label,
    ...Sizing,
    disk_mb: Type.Optional(
      Type.Integer({
        minimum: 128,
        maximum: 16 * 1024 * 1024,
        description: 'Size of the data volume in MiB. Default 1024; at most the volume quota.',
      }),
    ),
    scale_to_zero_seconds: Type.Optional(ScaleToZero),
    archive_timeout_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3600,
        description:
          'Switch to a new WAL segment (and archive it) after this many seconds with commits. Bounds the commits at risk if the host is lost. Default 60.',
      }),
    ),
    metadata: Type.Optional(Labels),
  },
  Strict,
);
export type CreateDatabaseRequest = Static<typeof CreateDatabaseRequest>;

export const UpdateDatabaseRequest = Type.Object(
  { label: Type.Optional(Label), scale_to_zero_seconds: Type.Optional(ScaleToZero) },
  Strict,
);
export type UpdateDatabaseRequest = Static<typeof UpdateDatabaseRequest>;

export const DatabaseArchive = Type.Object({
  last_archived_wal: Type.Union([Type.String(), Type.Null()], {
    description: 'Name of the last WAL file in the archive.',
  }),
  last_archived_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_base_backup_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_base_backup_lsn: Type.Union([Type.String(), Type.Null()]),
  epoch: Type.Integer({
    description: 'Raised by every restore onto a new volume; an older copy can no longer archive.',
  }),
});

export const Database = Type.Object({
  id: Type.String({ examples: ['db_0123456789abcdef'] }),
  org_id: Type.String(),
  label: Type.String(),
  state: DatabaseState,
  version: Type.String({ examples: ['17'] }),
  cpu: Type.Number(),
  memory_mb: Type.Integer(),
  disk_mb: Type.Integer(),
  scale_to_zero_seconds: Type.Integer(),
  archive_timeout_seconds: Type.Integer(),
  user: Type.String({ examples: ['app'] }),
  database: Type.String({ examples: ['app'] }),
  password: Type.String(),
  host: Type.String(),
  port: Type.Integer(),
  connection_url: Type.String({
    description: 'Direct to Postgres, over TLS (`sslmode=require` or `verify-full`).',
  }),
  pooled_url: Type.String({ description: 'Through PgBouncer in transaction mode.' }),
  parent_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The database this one is a branch or restore of.',
  }),
  restored_to: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'For a point-in-time restore: the target time.',
  }),
  sandbox_id: Type.String({ description: 'The sandbox the server runs in.' }),
  archive: DatabaseArchive,
  archive_lag_seconds: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description:
      'How long the oldest WAL file has waited for the archive, in seconds (0: nothing waits); null while the database is not ready or not yet measured.',
  }),
  metadata: Labels,
  created_at: Type.String({ format: 'date-time' }),
});
export type Database = Static<typeof Database>;
export const DatabaseList = Type.Object({ items: Type.Array(Database) });

export const DatabaseParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64 }) },
  Strict,
);

export const RestoreDatabaseRequest = Type.Object(
  {
    target_time: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          'Recover to this moment; without it, to the last archived WAL. Not before the first base backup and not in the future.',
      }),
    ),
    label: Type.Optional(Label),
  },
  Strict,
);
export type RestoreDatabaseRequest = Static<typeof RestoreDatabaseRequest>;

export const BranchDatabaseRequest = Type.Object({ label: Type.Optional(Label) }, Strict);
export type BranchDatabaseRequest = Static<typeof BranchDatabaseRequest>;

export const DatabaseEvent = Type.Object({
  at: Type.String({ format: 'date-time' }),
  kind: Type.String({ examples: ['created', 'hibernated', 'woken', 'crashed', 'recovered'] }),
  message: Type.String(),
});
export type DatabaseEvent = Static<typeof DatabaseEvent>;
export const DatabaseEventList = Type.Object({ items: Type.Array(DatabaseEvent) });

export const DatabaseLogQuery = Type.Object(
  { lines: Type.Integer({ minimum: 1, maximum: 10000, default: 200 }) },
  Strict,
);
export const DatabaseLogs = Type.Object({
  lines: Type.Array(Type.String(), { description: 'The last lines of the server log.' }),
});
