/** REST schemas of sandboxes: create, update, the sandbox record, listing, events, preview tokens. */
import { Type, type Static } from '@sinclair/typebox';
import { EgressSecrets, NetworkPolicy } from '../network';
import { EnvVars, Labels } from './common';
import { Strict } from './strict';
import { VolumeAttachment } from './volumes';

export const SandboxState = Type.Union(
  [
    Type.Literal('creating'),
    Type.Literal('running'),
    Type.Literal('paused'),
    Type.Literal('hibernated'),
    Type.Literal('stopping'),
    Type.Literal('stopped'),
    Type.Literal('error'),
  ],
  { description: 'Lifecycle state.' },
);
export type SandboxState = Static<typeof SandboxState>;

/** Settable at create and by PATCH: persistence and idle hibernation. */
const Persistence = {
  persistent: Type.Optional(
    Type.Boolean({
      description:
        'Never destroyed by the TTL; hibernated after idle_timeout_seconds without activity instead.',
    }),
  ),
  idle_timeout_seconds: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 7 * 24 * 3600,
      description:
        'For persistent sandboxes: hibernate after this long idle (no API call, no open exec stream, CPU below the threshold). Default 300.',
    }),
  ),
};

export const CreateSandboxRequest = Type.Object(
  {
    template: Type.String({ default: 'base', minLength: 1, maxLength: 64 }),
    from_snapshot: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'Continue from this snapshot (processes, memory and files as captured) instead of a template.',
      }),
    ),
    metadata: Type.Optional(Labels),
    env: Type.Optional(EnvVars),
    ttl_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 7 * 24 * 3600,
        description:
          'Destroyed after this long without API activity. Default: the server setting (3600).',
      }),
    ),
    ...Persistence,
    cpu: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 64,
        description: 'vCPUs; within the template limits.',
      }),
    ),
    memory_mb: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1024 * 1024,
        description: 'Memory limit; within the template limits.',
      }),
    ),
    preview_auth: Type.Optional(
      Type.Boolean({
        description:
          'Preview URLs need a preview token (returned once, as `preview_token`). Default: false, anyone who can reach the URL gets through.',
      }),
    ),
    network: Type.Optional(NetworkPolicy),
    secrets: Type.Optional(EgressSecrets),
    disk_mb: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1024 * 1024,
        description:
          'Size limit of what the sandbox writes to its file system; within the template limits. Writing past it fails with ENOSPC.',
      }),
    ),
    volumes: Type.Optional(
      Type.Array(VolumeAttachment, {
        maxItems: 64,
        description:
          'Volumes to attach. A writable attach is exclusive; read-only attaches can be shared.',
      }),
    ),
    host_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          "Place it on this host (the install's admin only; see GET /v1/hosts). Refused with the reason when that host cannot take it.",
      }),
    ),
  },
  Strict,
);
export type CreateSandboxRequest = Static<typeof CreateSandboxRequest>;

export const UpdateSandboxRequest = Type.Object(
  {
    metadata: Type.Optional(Labels),
    ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })),
    ...Persistence,
  },
  Strict,
);
export type UpdateSandboxRequest = Static<typeof UpdateSandboxRequest>;

export const Sandbox = Type.Object({
  id: Type.String({ examples: ['sbx_0123456789abcdef'] }),
  org_id: Type.String(),
  template: Type.String(),
  state: SandboxState,
  cpu: Type.Number(),
  memory_mb: Type.Integer(),
  disk_mb: Type.Integer({ description: 'Size limit of what the sandbox writes to its files.' }),
  volumes: Type.Array(VolumeAttachment),
  metadata: Labels,
  env_keys: Type.Array(Type.String(), {
    description: 'Names of the sandbox-wide env vars (values are never returned).',
  }),
  ttl_seconds: Type.Integer(),
  host_id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  last_activity_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time', description: 'last_activity_at + ttl_seconds' }),
  stopped_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  stop_reason: Type.Union([Type.String(), Type.Null()]),
  parent_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The sandbox this one was forked or restored from.',
  }),
  snapshot_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The snapshot it was started from.',
  }),
  lineage: Type.Array(Type.String(), {
    description: 'Ancestors, the first sandbox of the line first and parent_id last.',
  }),
  fork_kind: Type.Union([Type.Literal('memory'), Type.Literal('disk'), Type.Null()], {
    description:
      "memory: continued from a capture of the parent (fork-tree, snapshot); disk: the parent's files, started fresh.",
  }),
  persistent: Type.Boolean(),
  idle_timeout_seconds: Type.Integer(),
  preview_url: Type.String({
    description:
      'URL of a port in the sandbox: replace `{port}` with the port a server in the sandbox listens on.',
    examples: ['http://{port}-sbx_0123456789abcdef.localhost:8080'],
  }),
  preview_auth: Type.Boolean({ description: 'Preview URLs need a preview token.' }),
  preview_token: Type.Optional(
    Type.String({
      description:
        'Only in the answer to a create with `preview_auth: true`: the preview token. It is not stored and not shown again; rotate it with POST /v1/sandboxes/{id}/preview-token.',
    }),
  ),
});
export type Sandbox = Static<typeof Sandbox>;

export const ListSandboxesQuery = Type.Object(
  {
    state: Type.Optional(SandboxState),
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
  },
  {
    additionalProperties: false,
    patternProperties: { '^metadata\\..+$': Type.String({ maxLength: 256 }) },
  },
);
export type ListSandboxesQuery = Static<typeof ListSandboxesQuery> &
  Record<`metadata.${string}`, string>;

export const SandboxList = Type.Object({
  items: Type.Array(Sandbox),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});
export type SandboxList = Static<typeof SandboxList>;

export const SandboxEvent = Type.Object({
  at: Type.String({ format: 'date-time' }),
  from_state: Type.Union([Type.String(), Type.Null()]),
  to_state: Type.String(),
  cause: Type.String(),
});
export const SandboxEventList = Type.Object({ items: Type.Array(SandboxEvent) });

export const PreviewToken = Type.Object({
  sandbox_id: Type.String(),
  preview_token: Type.String({
    description:
      'Send as header `x-warren-preview-token`, or once as `?warren_preview_token=` (sets a cookie).',
  }),
  preview_url: Type.String(),
});
export type PreviewToken = Static<typeof PreviewToken>;
