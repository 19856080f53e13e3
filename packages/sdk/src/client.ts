/**
 * The one place that speaks HTTP: builds URLs, adds the token, encodes JSON
 * and turns failures into coded errors. Everything else in the SDK calls
 * `request` or `json` and only ever sees successful responses.
 *
 * Note: Node's fetch gives up on a response whose headers take more than 300 s,
 * or whose body is silent for 300 s. Long silent commands need a dispatcher
 * without those timeouts, e.g. undici's
 * `setGlobalDispatcher(new Agent({ headersTimeout: 0, bodyTimeout: 0 }))` (the CLI does this).
 */
import { WarrenError } from '@warren/protocol';
import { resolveConfig, tokenFilePath, type ConnectionOptions } from './config';
import { WarrenConnectionError, errorFromResponse } from './errors';

export type QueryValue = string | number | boolean | undefined;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  /** Sent as application/json. */
  json?: unknown;
  /** Sent as application/octet-stream; a stream is sent chunked, never buffered. */
  body?: string | Uint8Array | AsyncIterable<Uint8Array>;
  signal?: AbortSignal;
}

export class HttpClient {
  readonly apiUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(opts: ConnectionOptions = {}) {
    const config = resolveConfig(opts);
    this.apiUrl = config.apiUrl;
    this.#apiKey = config.apiKey;
    this.#fetch = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  /** The Authorization header, for connections that are not fetch (WebSockets). */
  authHeaders(): Record<string, string> {
    return this.#apiKey ? { authorization: `Bearer ${this.#apiKey}` } : {};
  }

  /** Sends a request and returns the response if it is 2xx; throws a coded error otherwise. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const url = this.url(path, opts.query);
    const headers: Record<string, string> = {};
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    const init: RequestInit = { method, headers, signal: opts.signal };
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(opts.json);
    } else if (opts.body !== undefined) {
      headers['content-type'] = 'application/octet-stream';
      init.body = opts.body;
      // Required by fetch to send a streamed body; harmless for a buffered one.
      init.duplex = 'half';
      // With redirects allowed, fetch tees a streamed body so it could replay it,
      // and the unread copy buffers the whole upload in memory.
      if (typeof opts.body !== 'string' && !(opts.body instanceof Uint8Array)) {
        init.redirect = 'error';
      }
    }

    let res: Response;
    try {
      res = await this.#fetch(url, init);
    } catch (err) {
      throw this.networkError(err);
    }
    if (!res.ok) throw await this.apiError(res);
    return res;
  }

  /** Like `request`, then decodes the JSON body (undefined for 204). */
  async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, path, opts);
    if (res.status === 204) return undefined as T;
    try {
      return (await res.json()) as T;
    } catch (err) {
      throw new WarrenError('INTERNAL', `invalid JSON in the response to ${method} ${path}`, err);
    }
  }

  url(path: string, query: Record<string, QueryValue> = {}): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) params.append(key, String(value));
    }
    const qs = params.toString();
    return `${this.apiUrl}${path}${qs ? `?${qs}` : ''}`;
  }

  private async apiError(res: Response): Promise<Error> {
    const text = await res.text().catch(() => '');
    const err = errorFromResponse(res.status, text);
    if (err.code === 'UNAUTHORIZED' && !this.#apiKey) {
      err.message +=
        ` (no API key was sent: pass apiKey / --token, set WARREN_API_KEY,` +
        ` or start the platform with \`warren up\`, which writes ${tokenFilePath()})`;
    }
    return err;
  }

  private networkError(err: unknown): unknown {
    // The caller's own abort is not a network failure.
    if (err instanceof Error && err.name === 'AbortError') return err;
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new WarrenConnectionError(
      `cannot reach the Warren API at ${this.apiUrl} (${reason}); is it running? (\`warren up\`)`,
      { cause: err },
    );
  }
}
