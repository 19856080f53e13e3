/**
 * Why a sandbox changed state, as webhooks report it. The lifecycle records a
 * cause string with each change (sandbox_events); which key made an API call
 * is known only to the request, so each API request runs in an
 * AsyncLocalStorage context that the webhook emitter reads. Work a request
 * starts that outlives it (timers) no longer counts as that request's.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';

export type Cause =
  | { kind: 'api'; key_id: string | null; request_id: string; detail: string }
  | {
      kind:
        | 'ttl'
        | 'idle'
        | 'host_lost'
        | 'out_of_memory'
        | 'platform_restart'
        | 'platform_shutdown'
        | 'database'
        | 'system';
      detail: string;
    };

interface RequestScope {
  request: FastifyRequest;
  open: boolean;
}

const scope = new AsyncLocalStorage<RequestScope>();
const scopes = new WeakMap<FastifyRequest, RequestScope>();

/** Runs every request's handling in a scope the webhook emitter can see. */
export function requestCauses(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const s = { request, open: true };
    scopes.set(request, s);
    scope.run(s, done);
  });
  app.addHook('onResponse', async (request) => {
    const s = scopes.get(request);
    if (s) s.open = false;
  });
}

/** The API request being handled, if any (and still open). */
export function currentRequest(): { keyId: string | null; requestId: string } | null {
  const s = scope.getStore();
  if (!s?.open) return null;
  return { keyId: s.request.principal?.tokenId ?? null, requestId: s.request.id };
}

/** The cause of a recorded state change, from its cause string and the request handling it. */
export function causeOf(
  detail: string,
  request: { keyId: string | null; requestId: string } | null,
): Cause {
  if (request) return { kind: 'api', key_id: request.keyId, request_id: request.requestId, detail };
  if (detail === 'ttl_expired') return { kind: 'ttl', detail };
  if (/^hibernate \(idle for /.test(detail)) return { kind: 'idle', detail };
  if (detail === 'lost') return { kind: 'host_lost', detail };
  if (detail.startsWith('out of memory')) return { kind: 'out_of_memory', detail };
  if (detail.startsWith('interrupted while')) return { kind: 'platform_restart', detail };
  if (detail === 'platform shut down') return { kind: 'platform_shutdown', detail };
  if (/database/.test(detail)) return { kind: 'database', detail };
  return { kind: 'system', detail };
}

/** The cause of an event an API route reports: the calling key. */
export function requestCause(detail: string): Cause {
  return causeOf(detail, currentRequest() ?? { keyId: null, requestId: '' });
}
