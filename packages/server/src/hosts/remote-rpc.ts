/**
 * The HTTP side of a remote host's client: plain JSON calls, ndjson event
 * and progress streams, and byte streams, over undici with the agent's CA.
 * Errors come back as WarrenErrors with the agent's code, message and
 * details; a connection that fails is HOST_UNREACHABLE.
 */
import { Readable } from 'node:stream';
import { Agent, fetch, type Response } from 'undici';
// This checkout's code table (HOST_UNREACHABLE); the same module as @warren/protocol's.
import { isErrorCode, WarrenError } from '@warren/protocol';

export interface RpcOptions {
  id: string;
  url: string;
  credential: string;
  ca?: string | Buffer;
  timeoutMs: number;
}

export const ARGS_HEADER = 'x-warren-args';
export const SIZE_HEADER = 'x-warren-size';

export function unreachable(o: RpcOptions, err: unknown): WarrenError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const reason = cause?.code ?? cause?.message ?? (err as Error).message;
  return new WarrenError('HOST_UNREACHABLE', `host ${o.id} at ${o.url} is unreachable: ${reason}`, {
    host_id: o.id,
    reason,
  });
}

/** The error a body says, or INTERNAL when it says none. */
export function errorFrom(status: number, body: unknown): WarrenError {
  const e = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)
    ?.error;
  if (e && isErrorCode(e.code)) return new WarrenError(e.code, String(e.message), e.details);
  return new WarrenError('INTERNAL', `the host agent answered ${status} without an error code`);
}

export class HostRpc {
  private readonly dispatcher: Agent;

  constructor(readonly o: RpcOptions) {
    this.dispatcher = new Agent({
      connect: { timeout: o.timeoutMs, ...(o.ca ? { ca: o.ca } : {}) },
      // Calls (a snapshot, a build) and streams (a watch) may take long: no idle timeouts.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  private async request(
    path: string,
    init: { body: unknown; headers?: Record<string, string>; signal?: AbortSignal },
  ): Promise<Response> {
    const isJson = !init.headers?.[ARGS_HEADER];
    try {
      return await fetch(`${this.o.url}${path}`, {
        method: 'POST',
        dispatcher: this.dispatcher,
        headers: {
          authorization: `Bearer ${this.o.credential}`,
          'content-type': isJson ? 'application/json' : 'application/octet-stream',
          ...init.headers,
        },
        body: isJson ? JSON.stringify(init.body) : (init.body as Readable),
        ...(isJson ? {} : { duplex: 'half' }),
        signal: init.signal,
      });
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw unreachable(this.o, err);
    }
  }

  private async failed(res: Response): Promise<WarrenError> {
    const body = await res.json().catch(() => null);
    return errorFrom(res.status, body);
  }

  /** A plain call: JSON arguments, `{result}` back. */
  async call<T>(path: string, args: unknown[]): Promise<T> {
    const res = await this.request(path, { body: args });
    if (!res.ok) throw await this.failed(res);
    const body = (await res.json().catch((err: unknown) => {
      throw unreachable(this.o, err);
    })) as { result?: T };
    return body.result as T;
  }

  /** The lines of an ndjson response; ends quietly when `signal` aborted it. */
  private async *lines(res: Response, signal?: AbortSignal): AsyncGenerator<unknown> {
    const decoder = new TextDecoder();
    let rest = '';
    try {
      for await (const chunk of res.body!) {
        rest += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = rest.indexOf('\n')) >= 0) {
          const line = rest.slice(0, at);
          rest = rest.slice(at + 1);
          if (line) yield JSON.parse(line);
        }
      }
    } catch (err) {
      if (signal?.aborted) return;
      throw unreachable(this.o, err);
    }
  }

  /** An event stream: start errors throw from here, later ones from the iterator. */
  async events<T>(path: string, args: unknown[], signal?: AbortSignal): Promise<AsyncIterable<T>> {
    if (signal?.aborted) return (async function* () {})();
    const res = await this.request(path, { body: args, signal }).catch((err: unknown) => {
      if (signal?.aborted) return null;
      throw err;
    });
    if (!res) return (async function* () {})();
    if (!res.ok) throw await this.failed(res);
    const lines = this.lines(res, signal);
    return (async function* () {
      for await (const line of lines) {
        const m = line as { event?: T; error?: unknown };
        if (m.error) throw errorFrom(500, m);
        yield m.event as T;
      }
    })();
  }

  /** A call with progress lines, then its result or error. */
  async progress<T>(
    path: string,
    args: unknown[],
    progress: (line: string, step?: number) => void,
    body?: Readable,
  ): Promise<T> {
    const res = await this.request(
      path,
      body
        ? { body, headers: { [ARGS_HEADER]: encodeURIComponent(JSON.stringify(args)) } }
        : { body: args },
    );
    if (!res.ok) throw await this.failed(res);
    for await (const line of this.lines(res)) {
      const m = line as { progress?: string; step?: number; done?: boolean; result?: T };
      if (m.done) return m.result as T;
      if ((m as { error?: unknown }).error) throw errorFrom(500, m);
      if (typeof m.progress === 'string') progress(m.progress, m.step ?? undefined);
    }
    throw unreachable(this.o, new Error('the host agent ended the call without a result'));
  }

  /** A call whose request body is a byte stream (arguments in a header). */
  async upload<T>(path: string, args: unknown[], body: Readable): Promise<T> {
    const res = await this.request(path, {
      body,
      headers: { [ARGS_HEADER]: encodeURIComponent(JSON.stringify(args)) },
    });
    if (!res.ok) throw await this.failed(res);
    return ((await res.json()) as { result: T }).result;
  }

  /** A call whose response body is a byte stream, its size in a header. */
  async download(path: string, args: unknown[]): Promise<{ size: number; stream: Readable }> {
    const res = await this.request(path, { body: args });
    if (!res.ok) throw await this.failed(res);
    const body = res.body!;
    const o = this.o;
    // Pulled as the caller reads (backpressure); a connection that breaks off is HOST_UNREACHABLE.
    const stream = Readable.from(
      (async function* () {
        try {
          for await (const chunk of body)
            yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        } catch (err) {
          throw unreachable(o, err);
        }
      })(),
      { objectMode: false },
    );
    stream.on('close', () => void body.cancel().catch(() => undefined));
    return { size: Number(res.headers.get(SIZE_HEADER)), stream };
  }

  async close(): Promise<void> {
    await this.dispatcher.destroy();
  }
}
