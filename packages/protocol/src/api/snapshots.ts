/** REST schemas of snapshots and forks. */
import { Type, type Static } from '@sinclair/typebox';
import { Labels } from './common';
import { Sandbox } from './sandboxes';
import { Strict } from './strict';

export const Snapshot = Type.Object({
  id: Type.String({ examples: ['snap_0123456789abcdef'] }),
  org_id: Type.String(),
  sandbox_id: Type.String({ description: 'The sandbox it was captured from.' }),
  template: Type.String(),
  cpu: Type.Number(),
  memory_mb: Type.Integer(),
  size_bytes: Type.Integer(),
  parent_pause_ms: Type.Number({ description: 'How long the sandbox was held for the capture.' }),
  created_at: Type.String({ format: 'date-time' }),
});
export type Snapshot = Static<typeof Snapshot>;
export const SnapshotList = Type.Object({ items: Type.Array(Snapshot) });
export const SnapshotParams = Type.Object(
  { snapshot_id: Type.String({ minLength: 1, maxLength: 64 }) },
  Strict,
);

export const ForkTreeRequest = Type.Object(
  {
    count: Type.Integer({ minimum: 1, maximum: 16, description: 'How many children (1 to 16).' }),
    metadata: Type.Optional(Labels),
    ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })),
  },
  Strict,
);
export type ForkTreeRequest = Static<typeof ForkTreeRequest>;
export const ForkRequest = Type.Object(
  {
    metadata: Type.Optional(Labels),
    ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })),
  },
  Strict,
);
export type ForkRequest = Static<typeof ForkRequest>;
export const ForkTreeResult = Type.Object({
  parent_id: Type.String(),
  parent_pause_ms: Type.Number({ description: 'How long the parent was held for the capture.' }),
  children: Type.Array(Sandbox),
});
