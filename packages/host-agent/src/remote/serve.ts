/**
 * serveHostApi: a host agent's HostApi over HTTP(S), so a control plane in
 * another process or on another machine reaches it through the same
 * interface (connectRemoteHost in @warren/server). Every request carries
 * `Authorization: Bearer <credential>`; the mapping is in docs/multi-host.md.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import type { WebSocket } from 'ws';
import type { HostApi } from '@warren/protocol';
import type { EgressRecord } from '../network/egress/types';
import { streamRoutes } from './serve-streams';
import { socketRoutes } from './serve-sockets';
import { argsOf, credentialCheck, errorOf, plainCall, wireError } from './wire';

export interface ServeHostOptions {
  /** The shared secret every request must carry as `Authorization: Bearer <credential>`. */
  credential: string;
  listen: { host: string; port: number };
  /** Serve HTTPS with this key and certificate (PEM). */
  tls?: { key: string | Buffer; cert: string | Buffer };
}

export interface ServedHost {
  /** Where the agent listens, e.g. `https://10.0.0.5:7070` (the port chosen when 0 was asked). */
  url: string;
  /** Stops listening and drops every connection; the host itself is left as it is. */
  close(): Promise<void>;
  /** Sends an egress record to every control plane subscribed to `GET /host/events`. */
  emitEgress(sandboxId: string, e: EgressRecord): void;
}

/** Largest JSON body of a call (writeStdin and archive.put carry data in it). */
const BODY_LIMIT = 64 * 1024 * 1024;

export async function serveHostApi(host: HostApi, o: ServeHostOptions): Promise<ServedHost> {
  const authorized = credentialCheck(o.credential);
  const app = (o.tls
    ? Fastify({ https: { key: o.tls.key, cert: o.tls.cert }, forceCloseConnections: true })
    : Fastify({ forceCloseConnections: true })) as unknown as FastifyInstance;
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) =>
    done(null, payload),
  );
  await app.register(websocket, { options: { maxPayload: BODY_LIMIT } });

  app.addHook('onRequest', async (request, reply) => {
    if (authorized(request.headers.authorization)) return;
    await reply.status(401).send({
      error: { code: 'UNAUTHORIZED', message: 'missing or wrong host agent credential' },
    });
    return reply;
  });
  app.setErrorHandler((err, _request, reply) => {
    const { status, body } = errorOf(err);
    void reply.status(status).send(body);
  });
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send({
      error: { code: 'NOT_FOUND', message: `no host call ${request.method} ${request.url}` },
    });
  });

  const subscribers = new Set<WebSocket>();
  await app.register(async (scope) => {
    scope.get('/host/events', { websocket: true }, (socket) => {
      subscribers.add(socket);
      socket.on('close', () => subscribers.delete(socket));
      socket.on('error', () => socket.terminate());
    });
    socketRoutes(scope, host);
  });
  streamRoutes(app, host, { bodyLimit: BODY_LIMIT });

  app.post('/host/:method', { bodyLimit: BODY_LIMIT }, async (request) => {
    const { method } = request.params as { method: string };
    const args = argsOf(request.body);
    if (method === 'info') return { result: await host.info() };
    if (method === 'capacity') return { result: await host.capacity() };
    if (method === 'close') {
      // Only a destroy is forwarded: a control plane that goes away leaves the sandboxes.
      await host.close(args[0] as { destroy?: boolean } | undefined);
      return {};
    }
    throw wireError('NOT_FOUND', `no host call ${method}`);
  });
  app.post('/host/:group/:method', { bodyLimit: BODY_LIMIT }, async (request) => {
    const { group, method } = request.params as { group: string; method: string };
    const fn = plainCall(host, group, method);
    if (!fn) throw wireError('NOT_FOUND', `no host call ${group}.${method}`);
    return { result: await fn(...argsOf(request.body)) };
  });

  await app.listen({ host: o.listen.host, port: o.listen.port });
  const { port } = app.server.address() as AddressInfo;
  const name = o.listen.host.includes(':') ? `[${o.listen.host}]` : o.listen.host;
  return {
    url: `${o.tls ? 'https' : 'http'}://${name}:${port}`,
    async close() {
      for (const socket of subscribers) socket.terminate();
      await app.close();
    },
    emitEgress(sandboxId, e) {
      const line = JSON.stringify({ sandbox_id: sandboxId, event: e });
      for (const socket of subscribers) if (socket.readyState === socket.OPEN) socket.send(line);
    },
  };
}
