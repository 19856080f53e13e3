/**
 * REST schemas of the code interpreter (docs/code-interpreter.md): code runs
 * in a context (a Jupyter kernel for python, a Node.js vm context for
 * javascript, a bash shell for bash) whose state persists between runs.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

export const CODE_LANGUAGES = ['python', 'javascript', 'bash'] as const;
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];
/** Longest run the API accepts and the default (ms). */
export const CODE_MAX_TIMEOUT_MS = 24 * 3600 * 1000;
export const CODE_DEFAULT_TIMEOUT_MS = 300_000;
/** The official template that has every language of the code interpreter. */
export const CODE_INTERPRETER_TEMPLATE = 'code-interpreter';

const Language = Type.Union(
  [Type.Literal('python'), Type.Literal('javascript'), Type.Literal('bash')],
  { description: 'python, javascript or bash' },
);
const ContextId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' });

export const CodeRunRequest = Type.Object(
  {
    code: Type.String({ maxLength: 4 * 1024 * 1024, description: 'The code to run' }),
    language: Type.Optional(Language),
    context_id: Type.Optional({
      ...ContextId,
      description: "The context to run in. Default: the language's default context",
    }),
    timeout_ms: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: CODE_MAX_TIMEOUT_MS,
        description: `Interrupt the run after this long (default ${CODE_DEFAULT_TIMEOUT_MS})`,
      }),
    ),
  },
  Strict,
);
export type CodeRunRequest = Static<typeof CodeRunRequest>;

export const CodeContextCreateRequest = Type.Object(
  {
    language: Language,
    cwd: Type.Optional(
      Type.String({ minLength: 1, maxLength: 4096, description: 'Working directory' }),
    ),
  },
  Strict,
);
export type CodeContextCreateRequest = Static<typeof CodeContextCreateRequest>;

export const CodeContext = Type.Object({
  id: Type.String(),
  language: Language,
  cwd: Type.Union([Type.String(), Type.Null()]),
  /** Runs so far (the kernel's execution count for python). */
  execution_count: Type.Integer(),
  /** The language's default context (runs without context_id use it). */
  default: Type.Boolean(),
});
export type CodeContext = Static<typeof CodeContext>;

export const CodeContextList = Type.Object({ items: Type.Array(CodeContext) });
export type CodeContextList = Static<typeof CodeContextList>;

/** A rich result: a MIME bundle (text/plain, text/html, image/png as base64, ...). */
export const CodeResultData = Type.Record(Type.String(), Type.Unknown());
export type CodeResultData = Static<typeof CodeResultData>;

/** One line of the ndjson stream of POST /v1/sandboxes/{id}/code. */
export const CodeEvent = Type.Union([
  Type.Object({
    type: Type.Literal('start'),
    execution_id: Type.String(),
    context_id: Type.String(),
    language: Language,
  }),
  Type.Object({ type: Type.Literal('stdout'), text: Type.String() }),
  Type.Object({ type: Type.Literal('stderr'), text: Type.String() }),
  Type.Object({
    type: Type.Literal('result'),
    data: CodeResultData,
    /** The value of the last expression (execute_result), not a display() call. */
    is_main_result: Type.Boolean(),
  }),
  Type.Object({
    type: Type.Literal('error'),
    name: Type.String(),
    value: Type.String(),
    traceback: Type.String(),
  }),
  Type.Object({
    type: Type.Literal('end'),
    execution_count: Type.Integer(),
    duration_ms: Type.Number(),
    /** Why the run was cut short: 'timeout' or 'interrupt' (DELETE or a client that left). */
    cancelled: Type.Union([Type.Literal('timeout'), Type.Literal('interrupt'), Type.Null()]),
  }),
]);
export type CodeEvent = Static<typeof CodeEvent>;

export const CodeContextParams = Type.Object({ id: Type.String(), context_id: Type.String() });
export const CodeExecutionParams = Type.Object({ id: Type.String(), execution_id: Type.String() });
