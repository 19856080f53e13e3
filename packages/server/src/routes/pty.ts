/**
 * Terminal sessions: REST to create, list, get, resize and kill them, and the
 * WebSocket a viewer attaches with (the same path as GET of one session).
 */
import type { FastifyPluginAsync, FastifyRequest, RouteOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { WebSocket } from 'ws';
import {
  IdParams,
  PTY_MAX_FRAME_BYTES,
  PtyCreateRequest,
  PtyInfo,
  PtyList,
  PtyParams,
  PtyResizeRequest,
  PtyToken,
  PtyTokenRequest,
  PtyWsQuery,
} from '@warren/protocol';
import type { Principal } from '../auth';
import type { AppContext } from '../context';
import { PtyService } from '../pty/service';
import { servePtySocket } from '../pty/socket';
import { NoContent, errors } from './responses';

/** Options of the `ws` server: frames over the limit are refused in the handler, with a typed error. */
export const WEBSOCKET_OPTIONS = { maxPayload: 16 * PTY_MAX_FRAME_BYTES };

/** A WebSocket upgrade may authenticate with ?token= (browsers cannot send the header). */
function queryToken(service: PtyService) {
  return async (request: FastifyRequest): Promise<Principal | null> => {
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') return null;
    const token = (request.query as { token?: unknown } | undefined)?.token;
    if (typeof token !== 'string' || !token) return null;
    const { id, pty_id } = request.params as { id: string; pty_id: string };
    return service.redeemToken(token, id, pty_id);
  };
}

export const ptyRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const service = new PtyService(ctx.host, ctx.sandboxes, ctx.config);

    app.post(
      '/v1/sandboxes/:id/pty',
      {
        schema: {
          tags: ['terminals'],
          summary: 'Start a terminal session (a process on a pseudo-terminal)',
          params: IdParams,
          body: PtyCreateRequest,
          response: { 201: PtyInfo, ...errors },
        },
      },
      async (req, reply) =>
        reply.status(201).send(await service.create(req.principal!.orgId, req.params.id, req.body)),
    );

    app.get(
      '/v1/sandboxes/:id/pty',
      {
        schema: {
          tags: ['terminals'],
          summary: 'List terminal sessions',
          params: IdParams,
          response: { 200: PtyList, ...errors },
        },
      },
      async (req) => ({ items: await service.list(req.principal!.orgId, req.params.id) }),
    );

    const attachRoute: RouteOptions = {
      method: 'GET',
      url: '/v1/sandboxes/:id/pty/:pty_id',
      config: { queryToken: queryToken(service) } as RouteOptions['config'],
      schema: {
        tags: ['terminals'],
        summary:
          'Get a terminal session; with a WebSocket upgrade, attach to it (binary frames are terminal bytes; see docs/terminals.md)',
        params: PtyParams,
        querystring: PtyWsQuery,
        response: { 200: PtyInfo, ...errors },
      },
      // The session must exist before the upgrade: a missing one is an HTTP 404.
      preHandler: async (req) => {
        const { id, pty_id } = req.params as { id: string; pty_id: string };
        if (req.ws) await service.get(req.principal!.orgId, id, pty_id);
      },
      handler: async (req) => {
        const { id, pty_id } = req.params as { id: string; pty_id: string };
        return service.get(req.principal!.orgId, id, pty_id);
      },
      wsHandler: (socket: WebSocket, req: FastifyRequest) => {
        const { id, pty_id } = req.params as { id: string; pty_id: string };
        const { since } = req.query as { since?: number };
        servePtySocket(socket, service, { orgId: req.principal!.orgId, id, ptyId: pty_id, since });
      },
    };
    fastify.route(attachRoute);

    app.delete(
      '/v1/sandboxes/:id/pty/:pty_id',
      {
        schema: {
          tags: ['terminals'],
          summary: "Kill a terminal session's processes and forget it",
          params: PtyParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        await service.kill(req.principal!.orgId, req.params.id, req.params.pty_id);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/v1/sandboxes/:id/pty/:pty_id/resize',
      {
        schema: {
          tags: ['terminals'],
          summary: 'Resize a terminal session (its programs get SIGWINCH)',
          params: PtyParams,
          body: PtyResizeRequest,
          response: { 200: PtyInfo, ...errors },
        },
      },
      async (req) =>
        service.resize(req.principal!.orgId, req.params.id, req.params.pty_id, req.body),
    );

    app.post(
      '/v1/sandboxes/:id/pty/:pty_id/token',
      {
        schema: {
          tags: ['terminals'],
          summary:
            "A short-lived token that opens this session's WebSocket once, as ?token= (for browsers)",
          params: PtyParams,
          body: PtyTokenRequest,
          response: { 201: PtyToken, ...errors },
        },
      },
      async (req, reply) =>
        reply
          .status(201)
          .send(
            await service.issueToken(
              req.principal!,
              req.params.id,
              req.params.pty_id,
              req.body.ttl_seconds,
            ),
          ),
    );
  };
