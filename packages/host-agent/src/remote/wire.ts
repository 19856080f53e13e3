/**
 * The wire of the host agent transport: which HostApi calls are plain JSON
 * calls, how arguments travel, and how errors become bodies. The client is
 * packages/server/src/hosts/remote-host.ts; docs/multi-host.md has the mapping.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ErrorBody, HostApi } from '@warren/protocol';

/** The calls that are `POST /host/<group>/<method>` with a JSON array of arguments. */
export const PLAIN_CALLS: Record<string, readonly string[]> = {
  sandboxes: [
    'create',
    'destroy',
    'pause',
    'resume',
    'hibernate',
    'wake',
    'capture',
    'releaseCapture',
    'snapshot',
    'live',
    'cpuUsageNs',
    'oomKilled',
    'usage',
    'reclaim',
    'checkNetwork',
    'setNetwork',
    'reconcile',
  ],
  processes: ['start', 'list', 'get', 'writeStdin', 'signal'],
  pty: ['create', 'list', 'get', 'resize', 'kill'],
  code: ['createContext', 'listContexts', 'restartContext', 'deleteContext', 'interrupt'],
  files: ['list', 'stat', 'mkdir', 'rename', 'remove'],
  templates: ['list', 'get', 'checkNew', 'rebuildReplacesRoot', 'remove', 'publish', 'fetch'],
  volumes: ['create', 'remove', 'usedBytes', 'mount', 'clone'],
  snapshots: ['delete'],
  archive: ['collect', 'upload', 'put', 'get', 'list', 'remove'],
};

/** Header carrying the JSON arguments of a call whose body is a byte stream. */
export const ARGS_HEADER = 'x-warren-args';
/** Header carrying the size of a file read. */
export const SIZE_HEADER = 'x-warren-size';

type Fn = (...args: unknown[]) => Promise<unknown>;

/** The host's function for a plain call, or null when there is no such plain call. */
export function plainCall(host: HostApi, group: string, method: string): Fn | null {
  if (!PLAIN_CALLS[group]?.includes(method)) return null;
  const target = (host as unknown as Record<string, Record<string, Fn>>)[group]!;
  return (...args) => target[method]!(...args);
}

/** Arguments sent as JSON: an array, or none. */
export function argsOf(value: unknown): unknown[] {
  if (value === undefined || value === null || value === '') return [];
  if (!Array.isArray(value)) throw wireError('INVALID_REQUEST', 'arguments must be a JSON array');
  return value;
}

/** Arguments in a header or query parameter (URI-encoded JSON). */
export function argsFrom(text: unknown): unknown[] {
  if (typeof text !== 'string' || !text) return [];
  try {
    return argsOf(JSON.parse(decodeURIComponent(text)));
  } catch (err) {
    if ((err as { code?: string }).code === 'INVALID_REQUEST') throw err;
    throw wireError('INVALID_REQUEST', 'arguments are not valid JSON');
  }
}

/** An error with a code and status, whichever copy of WarrenError the host threw it with. */
export function wireError(code: string, message: string): Error {
  return Object.assign(new Error(message), { name: 'WarrenError', code });
}

const FALLBACK_STATUS: Record<string, number> = {
  INVALID_REQUEST: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
};

/**
 * An error as the client sees it: a WarrenError keeps code, message and
 * details (its status follows from the code on both sides); anything else
 * is INTERNAL with its message.
 */
export function errorOf(err: unknown): { status: number; body: ErrorBody } {
  const e = err as { name?: unknown; code?: unknown; message?: unknown; details?: unknown };
  if (e && e.name === 'WarrenError' && typeof e.code === 'string') {
    const status = (err as { status?: unknown }).status;
    const error: Record<string, unknown> = { code: e.code, message: String(e.message) };
    if (e.details !== undefined) error.details = e.details;
    return {
      status: typeof status === 'number' ? status : (FALLBACK_STATUS[e.code] ?? 500),
      body: { error } as unknown as ErrorBody,
    };
  }
  const fastify = e as { statusCode?: unknown };
  if (typeof fastify?.statusCode === 'number' && fastify.statusCode < 500)
    return {
      status: 400,
      body: { error: { code: 'INVALID_REQUEST', message: String(e?.message) } },
    };
  const message = e && typeof e.message === 'string' ? e.message : String(err);
  return { status: 500, body: { error: { code: 'INTERNAL', message } } };
}

/** Compares a request's Authorization header with the credential in constant time. */
export function credentialCheck(credential: string): (header: string | undefined) => boolean {
  if (!credential) throw new Error('serveHostApi needs a non-empty credential');
  const want = createHash('sha256').update(`Bearer ${credential}`).digest();
  return (header) => {
    const got = createHash('sha256')
      .update(header ?? '')
      .digest();
    return timingSafeEqual(got, want);
  };
}
