/**
 * `sandbox.runCode()` and `sandbox.code`: the code interpreter
 * (docs/code-interpreter.md). A run streams its events; `runCode` collects
 * them into an Execution and hands each to the callbacks as it comes.
 */
import {
  WarrenError,
  type CodeContext,
  type CodeEvent,
  type CodeLanguage,
  type CodeResultData,
} from '@warren/protocol';
import type { HttpClient } from './client';
import { WarrenConnectionError } from './errors';
import { parseNdjson } from './ndjson';

/** A rich result: its MIME bundle, plus shortcuts to the usual types. */
export interface CodeResult {
  data: CodeResultData;
  /** The value of the cell's last expression (not a display() call). */
  isMainResult: boolean;
  text?: string;
  html?: string;
  /** base64 */
  png?: string;
  svg?: string;
  json?: unknown;
}

export interface CodeError {
  name: string;
  value: string;
  traceback: string;
}

export interface Execution {
  executionId: string;
  contextId: string;
  language: CodeLanguage;
  results: CodeResult[];
  logs: { stdout: string[]; stderr: string[] };
  /** The first error of the run (an exception, a timeout's KeyboardInterrupt), if any. */
  error: CodeError | null;
  executionCount: number;
  durationMs: number;
  /** 'timeout' or 'interrupt' when the run was cut short. */
  cancelled: 'timeout' | 'interrupt' | null;
  /** The main result's text/plain, if there is one. */
  text: string | undefined;
}

export interface RunCodeOptions {
  language?: CodeLanguage;
  /** A context id or a context; default: the language's default context. */
  context?: string | CodeContext;
  timeoutMs?: number;
  signal?: AbortSignal;
  onStart?(info: { executionId: string; contextId: string }): void;
  onStdout?(text: string): void;
  onStderr?(text: string): void;
  onResult?(result: CodeResult): void;
  onError?(error: CodeError): void;
}

function toResult(data: CodeResultData, isMainResult: boolean): CodeResult {
  const str = (k: string) => (typeof data[k] === 'string' ? (data[k] as string) : undefined);
  return {
    data,
    isMainResult,
    text: str('text/plain'),
    html: str('text/html'),
    png: str('image/png'),
    svg: str('image/svg+xml'),
    json: data['application/json'],
  };
}

export async function runCode(
  http: HttpClient,
  sandboxId: string,
  code: string,
  opts: RunCodeOptions = {},
): Promise<Execution> {
  const context = typeof opts.context === 'string' ? opts.context : opts.context?.id;
  const res = await http.request('POST', `/v1/sandboxes/${sandboxId}/code`, {
    json: {
      code,
      language: opts.language,
      context_id: context,
      timeout_ms: opts.timeoutMs,
    },
    signal: opts.signal,
  });
  if (!res.body) throw new WarrenConnectionError('code run response had no body');
  const exe: Partial<Execution> & Pick<Execution, 'results' | 'logs' | 'error'> = {
    results: [],
    logs: { stdout: [], stderr: [] },
    error: null,
  };
  for await (const e of parseNdjson<CodeEvent>(res.body)) {
    if (e.type === 'start') {
      Object.assign(exe, {
        executionId: e.execution_id,
        contextId: e.context_id,
        language: e.language,
      });
      opts.onStart?.({ executionId: e.execution_id, contextId: e.context_id });
    } else if (e.type === 'stdout') {
      exe.logs.stdout.push(e.text);
      opts.onStdout?.(e.text);
    } else if (e.type === 'stderr') {
      exe.logs.stderr.push(e.text);
      opts.onStderr?.(e.text);
    } else if (e.type === 'result') {
      const r = toResult(e.data, e.is_main_result);
      exe.results.push(r);
      opts.onResult?.(r);
    } else if (e.type === 'error') {
      const err = { name: e.name, value: e.value, traceback: e.traceback };
      exe.error ??= err;
      opts.onError?.(err);
    } else if (e.type === 'end') {
      return {
        ...(exe as Execution),
        executionCount: e.execution_count,
        durationMs: e.duration_ms,
        cancelled: e.cancelled,
        text: exe.results.find((r) => r.isMainResult)?.text,
      };
    }
  }
  throw new WarrenConnectionError('code run stream ended before its end event');
}

/** `sandbox.code`: contexts and interrupts. */
export class Code {
  readonly #http: HttpClient;
  readonly #base: string;
  readonly #id: string;

  constructor(http: HttpClient, sandboxId: string) {
    this.#http = http;
    this.#id = sandboxId;
    this.#base = `/v1/sandboxes/${sandboxId}/code`;
  }

  run(code: string, opts: RunCodeOptions = {}): Promise<Execution> {
    return runCode(this.#http, this.#id, code, opts);
  }

  createContext(opts: { language?: CodeLanguage; cwd?: string } = {}): Promise<CodeContext> {
    return this.#http.json<CodeContext>('POST', `${this.#base}/contexts`, {
      json: { language: opts.language ?? 'python', cwd: opts.cwd },
    });
  }

  async listContexts(): Promise<CodeContext[]> {
    return (await this.#http.json<{ items: CodeContext[] }>('GET', `${this.#base}/contexts`)).items;
  }

  restartContext(context: string | CodeContext): Promise<CodeContext> {
    const id = typeof context === 'string' ? context : context.id;
    return this.#http.json<CodeContext>(
      'POST',
      `${this.#base}/contexts/${encodeURIComponent(id)}/restart`,
    );
  }

  async deleteContext(context: string | CodeContext): Promise<void> {
    const id = typeof context === 'string' ? context : context.id;
    await this.#http.json('DELETE', `${this.#base}/contexts/${encodeURIComponent(id)}`);
  }

  /** Interrupts a running execution (EXECUTION_NOT_FOUND when it is not running). */
  async interrupt(executionId: string): Promise<void> {
    if (!executionId) throw new WarrenError('INVALID_REQUEST', 'an execution id is required');
    await this.#http.json('DELETE', `${this.#base}/executions/${encodeURIComponent(executionId)}`);
  }
}
