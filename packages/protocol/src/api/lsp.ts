/**
 * REST schemas of language servers: the WebSocket that carries LSP JSON-RPC
 * to a language server started in the sandbox, and the compact calls for
 * agents (definition, references, hover, diagnostics, symbols) that answer
 * short text such as `path:line:col` lines instead of LSP payloads.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

/** Languages with a known server, and the program each runs in the sandbox. */
export const LSP_SERVERS = {
  python: {
    cmd: 'pylsp',
    args: [] as string[],
    package: 'python3-pylsp (Debian; the base template has it)',
  },
  typescript: {
    cmd: 'typescript-language-server',
    args: ['--stdio'],
    package: 'typescript-language-server (npm; the typescript template has it)',
  },
} as const;
export type LspLanguage = keyof typeof LSP_SERVERS;
export const LSP_LANGUAGES = Object.keys(LSP_SERVERS) as LspLanguage[];

/** Largest WebSocket frame (one JSON-RPC message) a client may send; a larger one closes with 1009. */
export const LSP_MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** A warm server of the compact calls is stopped after this long without a call. */
export const LSP_IDLE_SECONDS = 300;
/** Warm servers kept per sandbox; a new one stops the least recently used. */
export const LSP_MAX_WARM_PER_SANDBOX = 4;
/** Largest file the compact calls open. */
export const LSP_MAX_FILE_BYTES = 4 * 1024 * 1024;
/** Longest and default life of a query token for a browser's WebSocket. */
export const LSP_TOKEN_TTL_SECONDS = 60;

const Language = Type.Union(
  LSP_LANGUAGES.map((l) => Type.Literal(l)),
  { description: 'The language, which picks the server: python (pylsp), typescript' },
);
const SandboxPath = Type.String({ minLength: 1, maxLength: 4096 });

export const LspWsQuery = Type.Object(
  {
    language: Language,
    root: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        pattern: '^/',
        description:
          "The project's directory in the sandbox: the server's working directory (default /root)",
      }),
    ),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  Strict,
);
export type LspWsQuery = Static<typeof LspWsQuery>;

export const LSP_ACTIONS = ['definition', 'references', 'hover', 'diagnostics', 'symbols'] as const;
export type LspAction = (typeof LSP_ACTIONS)[number];

export const LspActionParams = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    action: Type.Union(
      LSP_ACTIONS.map((a) => Type.Literal(a)),
      { description: 'What to ask the language server' },
    ),
  },
  Strict,
);
export type LspActionParams = Static<typeof LspActionParams>;

export const LspActionRequest = Type.Object(
  {
    language: Language,
    path: Type.String({
      ...SandboxPath,
      description: 'The file: absolute, or relative to root',
    }),
    line: Type.Optional(
      Type.Integer({ minimum: 1, description: '1-based line (definition, references, hover)' }),
    ),
    col: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          '1-based column, in UTF-16 code units as LSP counts them (characters, for ASCII text)',
      }),
    ),
    root: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        pattern: '^/',
        description: "The project's directory (default: the file's directory)",
      }),
    ),
  },
  Strict,
);
export type LspActionRequest = Static<typeof LspActionRequest>;

export const LspLocation = Type.Object({
  path: Type.String(),
  line: Type.Integer({ description: '1-based' }),
  col: Type.Integer({ description: '1-based' }),
});
export type LspLocation = Static<typeof LspLocation>;

export const LspActionResult = Type.Object({
  text: Type.String({
    description:
      'The answer as short text: `path:line:col` lines (definition, references), `path:line:col: severity: message` (diagnostics), `path:line:col kind name` (symbols), or the hover text; "" when there is none',
  }),
  count: Type.Integer({ description: 'Locations, diagnostics or symbols found (hover: 0 or 1)' }),
  truncated: Type.Boolean({ description: 'Only the first of many results are in text' }),
  root: Type.String({ description: 'The root the server was started for' }),
});
export type LspActionResult = Static<typeof LspActionResult>;

export const LspTokenRequest = Type.Object(
  {
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: LSP_TOKEN_TTL_SECONDS, default: LSP_TOKEN_TTL_SECONDS }),
    ),
  },
  Strict,
);
export type LspTokenRequest = Static<typeof LspTokenRequest>;

export const LspToken = Type.Object({
  token: Type.String({
    description: "Opens one of this sandbox's language server WebSockets as ?token=, once",
  }),
  expires_at: Type.String(),
});
export type LspToken = Static<typeof LspToken>;

/** WebSocket close codes the server uses. */
export const LSP_CLOSE = {
  /** The language server exited (after an `exit` notification, say). */
  exited: 1000,
  /** The sandbox is pausing, hibernating or being captured: connect again (a new server). */
  reconnect: 1012,
  /** A frame over LSP_MAX_FRAME_BYTES. */
  tooLarge: 1009,
  /** A frame that is not one JSON-RPC message. */
  invalid: 1007,
  /** The server could not be started or its stream broke. */
  error: 1011,
} as const;
