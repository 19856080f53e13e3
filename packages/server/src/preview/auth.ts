/**
 * Preview auth: a sandbox created with `preview_auth: true` serves its preview
 * URLs only to requests that carry its preview token, in a header, a cookie,
 * or once in the query (which sets the cookie). The token never reaches the
 * server in the sandbox: it is taken out of the forwarded request.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { TOKEN_PREFIX, WarrenError } from '@warren/protocol';
import { hashToken } from '../auth';
import type { SandboxRecord } from '../store/store';

export const PREVIEW_TOKEN_HEADER = 'x-warren-preview-token';
export const PREVIEW_TOKEN_PARAM = 'warren_preview_token';
export const PREVIEW_COOKIE = 'warren_preview_token';

export interface PresentedToken {
  token: string;
  from: 'header' | 'query' | 'cookie';
}

/** Splits a Cookie header into its pairs, keeping their text as sent. */
function cookiePairs(header: string | undefined): string[] {
  return (header ?? '')
    .split(';')
    .map((p) => p.trim())
    .filter(Boolean);
}

function cookieValue(pair: string, name: string): string | null {
  const eq = pair.indexOf('=');
  if (eq < 0 || pair.slice(0, eq).trim() !== name) return null;
  return pair.slice(eq + 1).trim();
}

export function presentedToken(req: IncomingMessage, url: URL): PresentedToken | null {
  const header = req.headers[PREVIEW_TOKEN_HEADER];
  if (typeof header === 'string' && header) return { token: header, from: 'header' };
  const query = url.searchParams.get(PREVIEW_TOKEN_PARAM);
  if (query) return { token: query, from: 'query' };
  for (const pair of cookiePairs(req.headers.cookie)) {
    const value = cookieValue(pair, PREVIEW_COOKIE);
    if (value) return { token: value, from: 'cookie' };
  }
  return null;
}

function tokenMatches(token: string, hash: string | null): boolean {
  if (!hash) return false;
  const a = Buffer.from(hashToken(token), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * An API key sent to a preview URL (`Authorization: Bearer wrn_...`): the
 * sandbox must then be one the key may see, and the key never reaches the
 * sandbox. Other Authorization headers belong to the app and pass through.
 */
export function apiKeyHeader(headers: IncomingHttpHeaders): string | null {
  const value = headers.authorization;
  if (typeof value !== 'string') return null;
  return new RegExp(`^Bearer\\s+${TOKEN_PREFIX}`, 'i').test(value) ? value : null;
}

/** Throws PREVIEW_AUTH_REQUIRED unless the sandbox is open or the request has its token. */
export function checkPreviewAuth(row: SandboxRecord, presented: PresentedToken | null): void {
  if (row.preview_auth !== 1) return;
  if (!presented)
    throw new WarrenError(
      'PREVIEW_AUTH_REQUIRED',
      `preview URLs of ${row.id} need its preview token: header ${PREVIEW_TOKEN_HEADER}, or ?${PREVIEW_TOKEN_PARAM}=`,
    );
  if (!tokenMatches(presented.token, row.preview_token_hash))
    throw new WarrenError('PREVIEW_AUTH_REQUIRED', `invalid preview token for ${row.id}`);
}

/** The request as the sandbox sees it: no preview token in its URL, headers or cookies. */
export function withoutToken(
  rawUrl: string,
  url: URL,
  headers: IncomingHttpHeaders,
): { path: string; headers: IncomingHttpHeaders } {
  const out = { ...headers };
  delete out[PREVIEW_TOKEN_HEADER];
  if (apiKeyHeader(out)) delete out.authorization;
  if (out.cookie !== undefined) {
    const kept = cookiePairs(out.cookie).filter((p) => cookieValue(p, PREVIEW_COOKIE) === null);
    if (kept.length) out.cookie = kept.join('; ');
    else delete out.cookie;
  }
  // The path goes on as sent, unless the token has to come out of its query.
  if (!url.searchParams.has(PREVIEW_TOKEN_PARAM)) return { path: rawUrl, headers: out };
  const stripped = new URL(url);
  stripped.searchParams.delete(PREVIEW_TOKEN_PARAM);
  return { path: stripped.pathname + stripped.search, headers: out };
}

/** The Set-Cookie header that keeps a token given in the query, for this host only. */
export function tokenCookie(token: string, secure: boolean): string {
  return `${PREVIEW_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** A token in the query of a GET or HEAD moves into a cookie, by a redirect to the URL without it. */
export function tokenComesOut(method: string | undefined): boolean {
  return method === 'GET' || method === 'HEAD';
}
