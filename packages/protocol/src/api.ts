/**
 * The REST contract, declared once as TypeBox schemas. The server validates
 * requests with them, the OpenAPI document is generated from them, and the SDK
 * takes its types from them.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { EgressSecrets, NetworkPolicy } from './network';

const Strict = { additionalProperties: false } as const;

export const Labels = Type.Record(
  Type.String({ minLength: 1, maxLength: 63 }),
  Type.String({ maxLength: 256 }),
  {
    description: 'Free-form string labels; list sandboxes by them with `metadata.<key>=<value>`.',
  },
);
export const EnvVars = Type.Record(
  Type.String({ minLength: 1, maxLength: 256, pattern: '^[^=\\u0000]+$' }),
  Type.String({ maxLength: 32768 }),
);

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

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, Strict);

export const VolumeName = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9][a-z0-9_-]*$',
  description: 'Lower-case letters, digits, `-` and `_`; starts with a letter or digit.',
});

export const VolumeAttachment = Type.Object(
  {
    name: VolumeName,
    mount_path: Type.String({
      minLength: 1,
      maxLength: 4096,
      description:
        'Absolute path in the sandbox; not `/`, and not under /opt/warren, /run/warren, /proc, /sys or /dev.',
    }),
    read_only: Type.Boolean({ default: false }),
  },
  Strict,
);
export type VolumeAttachment = Static<typeof VolumeAttachment>;

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

export const DeleteResult = Type.Object({ id: Type.String(), deleted: Type.Boolean() });

// ---- volumes ----

export const CreateVolumeRequest = Type.Object(
  {
    name: VolumeName,
    size_mb: Type.Integer({
      minimum: 8,
      maximum: 16 * 1024 * 1024,
      description: 'Size limit in MiB (at least 8); at most the server quota.',
    }),
  },
  Strict,
);
export type CreateVolumeRequest = Static<typeof CreateVolumeRequest>;

export const Volume = Type.Object({
  id: Type.String({ examples: ['vol_0123456789abcdef'] }),
  org_id: Type.String(),
  name: Type.String(),
  size_mb: Type.Integer(),
  used_bytes: Type.Integer({ description: 'Bytes in use on the volume file system.' }),
  attachments: Type.Array(
    Type.Object({
      sandbox_id: Type.String(),
      mount_path: Type.String(),
      read_only: Type.Boolean(),
    }),
  ),
  created_at: Type.String({ format: 'date-time' }),
});
export type Volume = Static<typeof Volume>;
export const VolumeList = Type.Object({ items: Type.Array(Volume) });
export const VolumeParams = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 64 }) },
  Strict,
);

// ---- exec and processes ----

export const ExecRequest = Type.Object(
  {
    cmd: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'Program to run, looked up on PATH. No shell is involved.',
    }),
    args: Type.Array(Type.String({ maxLength: 131072 }), { default: [], maxItems: 4096 }),
    env: Type.Optional(EnvVars),
    cwd: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    stdin: Type.Optional(
      Type.String({
        maxLength: 16 * 1024 * 1024,
        description: 'Written to the process stdin, then closed.',
      }),
    ),
    timeout: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 86400,
        description: 'Seconds; the process group is killed after it.',
      }),
    ),
    background: Type.Optional(
      Type.Boolean({
        description: 'Start and return at once with the process; reattach with /processes.',
      }),
    ),
    user: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'Run as this user of the sandbox: "root", a name, "uid", "uid:gid" or "name:group". Default: the template\'s user (root unless the image sets one).',
      }),
    ),
  },
  Strict,
);
export type ExecRequest = Static<typeof ExecRequest>;

export const ExecResult = Type.Object({
  pid: Type.Integer(),
  exit_code: Type.Integer({
    description: '127 when the program is not found; 128+N when killed by signal N.',
  }),
  signal: Type.Union([Type.String(), Type.Null()]),
  stdout: Type.String(),
  stderr: Type.String(),
  timed_out: Type.Boolean(),
  duration_ms: Type.Number(),
});
export type ExecResult = Static<typeof ExecResult>;

export const ExecEvent = Type.Union([
  Type.Object({ type: Type.Literal('start'), pid: Type.Integer() }),
  Type.Object({ type: Type.Literal('stdout'), data: Type.String() }),
  Type.Object({ type: Type.Literal('stderr'), data: Type.String() }),
  Type.Object({
    type: Type.Literal('exit'),
    exit_code: Type.Integer(),
    signal: Type.Union([Type.String(), Type.Null()]),
    timed_out: Type.Boolean(),
    duration_ms: Type.Number(),
  }),
  Type.Object({ type: Type.Literal('error'), code: Type.String(), message: Type.String() }),
]);
export type ExecEvent = Static<typeof ExecEvent>;

export const ProcessInfo = Type.Object({
  pid: Type.Integer(),
  cmd: Type.String(),
  args: Type.Array(Type.String()),
  cwd: Type.String(),
  state: Type.Union([Type.Literal('running'), Type.Literal('exited')]),
  exit_code: Type.Union([Type.Integer(), Type.Null()]),
  signal: Type.Union([Type.String(), Type.Null()]),
  timed_out: Type.Boolean(),
  started_at: Type.String({ format: 'date-time' }),
  ended_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  output_truncated: Type.Boolean({
    description: 'True once old output was dropped from the replay buffer.',
  }),
});
export type ProcessInfo = Static<typeof ProcessInfo>;

export const ProcessList = Type.Object({ items: Type.Array(ProcessInfo) });

export const PidParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64 }), pid: Type.Integer({ minimum: 1 }) },
  Strict,
);

export const StdinRequest = Type.Object(
  {
    data: Type.String({ default: '', maxLength: 16 * 1024 * 1024 }),
    eof: Type.Optional(Type.Boolean()),
  },
  Strict,
);
export type StdinRequest = Static<typeof StdinRequest>;

export const SIGNALS = [
  'SIGTERM',
  'SIGKILL',
  'SIGINT',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGSTOP',
  'SIGCONT',
] as const;
export const SignalRequest = Type.Object(
  {
    signal: Type.Union(
      SIGNALS.map((s) => Type.Literal(s)),
      { default: 'SIGTERM' },
    ),
  },
  Strict,
);
export type SignalRequest = Static<typeof SignalRequest>;

export const OutputQuery = Type.Object({ follow: Type.Boolean({ default: true }) }, Strict);

// ---- files ----

export const PathQuery = Type.Object(
  { path: Type.String({ minLength: 1, maxLength: 4096 }) },
  Strict,
);
export const RemoveQuery = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    recursive: Type.Boolean({ default: false }),
  },
  Strict,
);
export const WriteQuery = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    mode: Type.Optional(Type.String({ pattern: '^[0-7]{3,4}$' })),
  },
  Strict,
);

export const FileType = Type.Union([
  Type.Literal('file'),
  Type.Literal('dir'),
  Type.Literal('symlink'),
  Type.Literal('other'),
]);
export const FileInfo = Type.Object({
  name: Type.String(),
  path: Type.String(),
  type: FileType,
  size: Type.Integer(),
  mode: Type.String({ description: 'Permission bits in octal, e.g. "644".' }),
  mtime: Type.String({ format: 'date-time' }),
  symlink_target: Type.Optional(Type.String()),
});
export type FileInfo = Static<typeof FileInfo>;
export const FileList = Type.Object({ items: Type.Array(FileInfo) });
export type FileList = Static<typeof FileList>;

export const WriteResult = Type.Object({ path: Type.String(), size: Type.Integer() });
export type WriteResult = Static<typeof WriteResult>;

export const MkdirRequest = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    parents: Type.Boolean({ default: true }),
  },
  Strict,
);
export type MkdirRequest = Static<typeof MkdirRequest>;
export const RenameRequest = Type.Object(
  {
    from: Type.String({ minLength: 1, maxLength: 4096 }),
    to: Type.String({ minLength: 1, maxLength: 4096 }),
  },
  Strict,
);
export type RenameRequest = Static<typeof RenameRequest>;

// ---- templates and health ----

export const ReadyProbe = Type.Object(
  {
    cmd: Type.Array(Type.String({ maxLength: 4096 }), { minItems: 1, maxItems: 64 }),
    timeout: Type.Optional(
      Type.Number({
        minimum: 0.1,
        maximum: 600,
        description: 'Seconds the check may keep failing before the build fails (default 30).',
      }),
    ),
  },
  Strict,
);
export type ReadyProbe = Static<typeof ReadyProbe>;

export const Template = Type.Object({
  id: Type.String(),
  name: Type.String(),
  state: Type.Union([Type.Literal('ready'), Type.Literal('building'), Type.Literal('error')]),
  default_cpu: Type.Number(),
  default_memory_mb: Type.Integer(),
  max_cpu: Type.Number(),
  max_memory_mb: Type.Integer(),
  default_disk_mb: Type.Integer(),
  max_disk_mb: Type.Integer(),
  rootfs_bytes: Type.Integer(),
  snapshot_bytes: Type.Integer(),
  built_at: Type.String({ format: 'date-time' }),
  source: Type.Optional(
    Type.Union([Type.Literal('builtin'), Type.Literal('image'), Type.Literal('recipe')]),
  ),
  base: Type.Optional(Type.String({ description: 'The template a recipe started from.' })),
  layers: Type.Optional(
    Type.Array(Type.Object({ digest: Type.String(), size: Type.Integer() }), {
      description: 'Image layers, in the order they were applied.',
    }),
  ),
  build_ms: Type.Optional(Type.Number({ description: 'How long the last build took.' })),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
  workdir: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  user: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  start: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
  ready: Type.Optional(Type.Union([ReadyProbe, Type.Null()])),
});
export type Template = Static<typeof Template>;
export const TemplateList = Type.Object({ items: Type.Array(Template) });

const EnvName = Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 });
const Argv = Type.Array(Type.String({ maxLength: 65536 }), { minItems: 1, maxItems: 256 });

export const RecipeStep = Type.Union([
  Type.Object(
    {
      run: Type.String({ minLength: 1, maxLength: 65536, description: 'A /bin/sh command line.' }),
      timeout: Type.Optional(
        Type.Number({ minimum: 1, maximum: 3600, description: 'Seconds (default 600).' }),
      ),
    },
    Strict,
  ),
  Type.Object(
    {
      copy: Type.Object(
        {
          dest: Type.String({ minLength: 1, maxLength: 4096 }),
          content: Type.String({ description: 'File content, base64.' }),
          mode: Type.Optional(Type.String({ pattern: '^0?[0-7]{3,4}$' })),
        },
        Strict,
      ),
    },
    Strict,
  ),
  Type.Object({ env: Type.Record(EnvName, Type.String({ maxLength: 65536 })) }, Strict),
  Type.Object({ workdir: Type.String({ minLength: 1, maxLength: 4096 }) }, Strict),
  Type.Object({ start: Argv }, Strict),
  Type.Object({ ready: ReadyProbe }, Strict),
]);
export type RecipeStep = Static<typeof RecipeStep>;

export const TemplateName = Type.String({
  pattern: '^[a-z0-9][a-z0-9._-]{0,62}$',
  description: 'Lower-case letters, digits, ".", "_" and "-"; starts with a letter or digit.',
});

const SizingFields = {
  default_cpu: Type.Optional(Type.Number({ minimum: 0.1, maximum: 64 })),
  default_memory_mb: Type.Optional(Type.Integer({ minimum: 64, maximum: 1048576 })),
  max_cpu: Type.Optional(Type.Number({ minimum: 0.1, maximum: 64 })),
  max_memory_mb: Type.Optional(Type.Integer({ minimum: 64, maximum: 1048576 })),
};

export const TemplateBuildRequest = Type.Object(
  {
    name: TemplateName,
    base: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Recipe: the template to start from.',
      }),
    ),
    image: Type.Optional(
      Type.Object(
        {
          path: Type.String({
            minLength: 1,
            maxLength: 4096,
            description:
              'Server-side path of an OCI image layout or `docker save` archive (directory or tar).',
          }),
        },
        Strict,
      ),
    ),
    steps: Type.Optional(Type.Array(RecipeStep, { maxItems: 200 })),
    ...SizingFields,
    start: Type.Optional(Type.Union([Argv, Type.Null()])),
    ready: Type.Optional(Type.Union([ReadyProbe, Type.Null()])),
  },
  Strict,
);
export type TemplateBuildRequest = Static<typeof TemplateBuildRequest>;

/** Options of an image upload (POST /v1/templates/:name/image), as query parameters. */
export const TemplateImageQuery = Type.Object(
  {
    ...SizingFields,
    start: Type.Optional(Type.Array(Type.String({ maxLength: 65536 }), { maxItems: 256 })),
    ready: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 64 })),
    ready_timeout: Type.Optional(Type.Number({ minimum: 0.1, maximum: 600 })),
  },
  Strict,
);
export type TemplateImageQuery = Static<typeof TemplateImageQuery>;

/** One line of a build's ndjson stream. */
export const TemplateBuildEvent = Type.Union([
  Type.Object({
    type: Type.Literal('log'),
    line: Type.String(),
    step: Type.Optional(Type.Integer()),
  }),
  Type.Object({ type: Type.Literal('done'), template: Template }),
  Type.Object({
    type: Type.Literal('error'),
    code: Type.String(),
    message: Type.String(),
    step: Type.Optional(Type.Integer()),
  }),
]);
export type TemplateBuildEvent = Static<typeof TemplateBuildEvent>;
export const NameParams = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 64 }) },
  Strict,
);

export const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  runtime: Type.Object({ driver: Type.String(), version: Type.String() }),
  hosts: Type.Array(
    Type.Object({
      id: Type.String(),
      memory_budget_mb: Type.Integer(),
      memory_reserved_mb: Type.Integer(),
      sandboxes: Type.Integer(),
    }),
  ),
  uptime_seconds: Type.Number(),
});
export type Health = Static<typeof Health>;

export const ErrorResponse = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    request_id: Type.Optional(Type.String()),
    details: Type.Optional(Type.Unknown()),
  }),
});

export type { Static, TSchema };
