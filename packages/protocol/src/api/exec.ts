/** REST schemas of exec and processes: run, stream events, stdin, signals, output replay. */
import { Type, type Static } from '@sinclair/typebox';
import { EnvVars } from './common';
import { Strict } from './strict';

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
