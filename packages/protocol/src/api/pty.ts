/**
 * REST schemas of terminal (PTY) sessions, and the frames of their WebSocket.
 * A session is a process on a pseudo-terminal inside the sandbox, kept by the
 * guest agent with a scrollback buffer; any number of viewers attach to it.
 */
import { Type, type Static } from '@sinclair/typebox';
import { EnvVars } from './common';
import { Strict } from './strict';

/** Terminal sizes a session accepts, in character cells. */
export const PTY_MAX_COLS = 1000;
export const PTY_MAX_ROWS = 1000;
/** Terminal output kept per session and replayed to each new viewer. */
export const PTY_SCROLLBACK_BYTES = 256 * 1024;
/** Largest WebSocket frame a viewer may send; a larger one closes the connection (1009). */
export const PTY_MAX_FRAME_BYTES = 1024 * 1024;
/** Longest and default life of a query token for a browser's WebSocket. */
export const PTY_TOKEN_TTL_SECONDS = 60;

const Cols = Type.Integer({ minimum: 1, maximum: PTY_MAX_COLS, description: 'Columns' });
const Rows = Type.Integer({ minimum: 1, maximum: PTY_MAX_ROWS, description: 'Rows' });

export const PtyCreateRequest = Type.Object(
  {
    cols: Cols,
    rows: Rows,
    cmd: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description:
          "Program to run, looked up on PATH. Default: the user's login shell, else bash, else sh.",
      }),
    ),
    args: Type.Optional(Type.Array(Type.String({ maxLength: 131072 }), { maxItems: 4096 })),
    env: Type.Optional(EnvVars),
    cwd: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    user: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Run as this user of the sandbox (as exec does). Default: the template user.',
      }),
    ),
    idle_timeout: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 7 * 86400,
        description:
          'Seconds without any viewer after which the session is killed (default: the server setting, one hour).',
      }),
    ),
  },
  Strict,
);
export type PtyCreateRequest = Static<typeof PtyCreateRequest>;

export const PtyInfo = Type.Object({
  pty_id: Type.String(),
  pid: Type.Integer(),
  cmd: Type.String(),
  args: Type.Array(Type.String()),
  cwd: Type.String(),
  cols: Type.Integer(),
  rows: Type.Integer(),
  state: Type.Union([Type.Literal('running'), Type.Literal('exited')]),
  exit_code: Type.Union([Type.Integer(), Type.Null()]),
  signal: Type.Union([Type.String(), Type.Null()]),
  viewers: Type.Integer({ description: 'WebSocket connections attached now' }),
  idle_timeout: Type.Integer({ description: 'Seconds without a viewer before it is killed' }),
  created_at: Type.String(),
  ended_at: Type.Union([Type.String(), Type.Null()]),
});
export type PtyInfo = Static<typeof PtyInfo>;

export const PtyList = Type.Object({ items: Type.Array(PtyInfo) });
export type PtyList = Static<typeof PtyList>;

export const PtyParams = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    pty_id: Type.String({ minLength: 1, maxLength: 64 }),
  },
  Strict,
);
export type PtyParams = Static<typeof PtyParams>;

export const PtyResizeRequest = Type.Object({ cols: Cols, rows: Rows }, Strict);
export type PtyResizeRequest = Static<typeof PtyResizeRequest>;

export const PtyTokenRequest = Type.Object(
  {
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: PTY_TOKEN_TTL_SECONDS, default: PTY_TOKEN_TTL_SECONDS }),
    ),
  },
  Strict,
);
export type PtyTokenRequest = Static<typeof PtyTokenRequest>;

export const PtyToken = Type.Object({
  token: Type.String({
    description: 'Opens one WebSocket as ?token=<token>, once, until expires_at',
  }),
  expires_at: Type.String(),
  websocket_path: Type.String({ description: 'The path to open, token included' }),
});
export type PtyToken = Static<typeof PtyToken>;

export const PtyWsQuery = Type.Object(
  {
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    since: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'WebSocket: replay the scrollback from this output offset (a reconnecting viewer passes the offset it has reached)',
      }),
    ),
  },
  Strict,
);

/** Text frames of the WebSocket (binary frames are terminal bytes, both ways). */
export type PtyClientFrame = { type: 'resize'; cols: number; rows: number };
export type PtyServerFrame =
  /** The first frame: the output offset of the first terminal byte that follows. */
  | { type: 'attached'; offset: number }
  | { type: 'exit'; exit_code: number; signal: string | null }
  | { type: 'error'; code: string; message: string };

/** WebSocket close codes the server uses. */
export const PTY_CLOSE = {
  /** The process exited (after the exit frame). */
  exited: 1000,
  /** The sandbox is pausing, hibernating or being captured: reconnect to carry on. */
  reconnect: 1012,
  /** The session was killed or is gone. */
  gone: 4404,
  /** A frame over PTY_MAX_FRAME_BYTES. */
  tooLarge: 1009,
  /** The sandbox agent's stream broke. */
  error: 1011,
} as const;
