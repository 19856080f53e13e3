/**
 * A fetch that answers through the API's own routes in-process (Fastify's
 * inject), for SDK clients running inside the server (the MCP endpoint's
 * tools). Requests go through the same hooks as over the network, so the
 * caller's key, scopes, restrictions and organisation apply, audits record
 * them, and it works whatever the API listens on (TLS, a proxy in front).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';

type Payload = string | Buffer | Readable;

function payloadOf(body: RequestInit['body']): Payload | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (Symbol.asyncIterator in (body as object))
    return Readable.from(body as unknown as AsyncIterable<Uint8Array>);
  throw new TypeError('in-process fetch: unsupported request body');
}

/** `remoteAddress`: the address of the outer request, so per-address limits see the real caller. */
export function injectFetch(app: FastifyInstance, remoteAddress: string): typeof fetch {
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const res = await app.inject({
      method: (init.method ?? 'GET') as 'GET',
      url: url.pathname + url.search,
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      payload: payloadOf(init.body),
      remoteAddress,
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, String(v));
    }
    const empty = res.statusCode === 204 || res.statusCode === 304;
    return new Response(empty ? null : res.rawPayload, { status: res.statusCode, headers });
  };
}
