/**
 * The REST client of the dashboard: fetch with the signed-in key, every
 * failure turned into an ApiError with Warren's error code and message. A 401
 * from any call signs the user out (the key expired or was revoked).
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null = null,
  ) {
    super(message);
  }
}

const KEY = 'warren.key';
const NOTICE = 'warren.notice';

/** The API key lives in sessionStorage only: gone when the tab closes. */
export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn(key: string): void {
    sessionStorage.setItem(KEY, key);
    sessionStorage.removeItem(NOTICE);
  },
  signOut(notice?: string): void {
    sessionStorage.removeItem(KEY);
    if (notice) sessionStorage.setItem(NOTICE, notice);
  },
  /** The message for the sign-in page, read once. */
  takeNotice(): string | null {
    const n = sessionStorage.getItem(NOTICE);
    sessionStorage.removeItem(NOTICE);
    return n;
  },
};

let onUnauthorized: (err: ApiError) => void = () => undefined;
/** The app's reaction to a 401: sign out, back to the sign-in page. */
export function setUnauthorizedHandler(fn: (err: ApiError) => void): void {
  onUnauthorized = fn;
}

/** An ApiError from a failed response: Warren's error body, or the status when there is none. */
export async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as {
      error?: { code?: string; message?: string; request_id?: string };
    };
    if (body.error?.code)
      return new ApiError(
        res.status,
        body.error.code,
        body.error.message ?? '',
        body.error.request_id ?? null,
      );
  } catch {
    // not JSON: fall through
  }
  return new ApiError(res.status, `HTTP_${res.status}`, text.slice(0, 200) || res.statusText);
}

export interface RequestOptions {
  method?: string;
  json?: unknown;
  body?: BodyInit;
  key?: string;
  signal?: AbortSignal;
}

/** A raw call: the Response when it succeeded, else throws ApiError. */
export async function call(path: string, opts: RequestOptions = {}): Promise<Response> {
  const key = opts.key ?? session.key();
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  if (opts.body !== undefined && opts.json === undefined)
    headers['content-type'] = 'application/octet-stream';
  let res: Response;
  try {
    res = await fetch(path, {
      method: opts.method ?? 'GET',
      headers,
      body: opts.json !== undefined ? JSON.stringify(opts.json) : opts.body,
      signal: opts.signal,
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'CONNECTION_FAILED', `cannot reach the API: ${(err as Error).message}`);
  }
  if (res.ok) return res;
  const err = await errorFrom(res);
  if (res.status === 401 && opts.key === undefined) onUnauthorized(err);
  throw err;
}

/** A JSON call; 204 answers undefined. */
export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const res = await call(path, opts);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export function query(
  params: Record<string, string | number | boolean | undefined | null>,
): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
