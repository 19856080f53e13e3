/**
 * Language servers: the WebSocket that carries LSP JSON-RPC to a server of
 * its own in the sandbox, the query token a browser opens it with, and the
 * compact calls for agents (POST .../lsp/<action>).
 */
import type { FastifyPluginAsync, FastifyRequest, RouteOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { WebSocket } from 'ws';
import { Type } from '@sinclair/typebox';
import {
  IdParams,
  LspActionParams,
  LspActionRequest,
  LspActionResult,
  LspToken,
  LspTokenRequest,
  LspWsQuery,
  type LspLanguage,
} from '@warren/protocol';
import type { Principal } from '../auth';
import type { AppContext } from '../context';
import { LspService } from '../lsp/service';
import type { LanguageServerProcess } from '../lsp/server-process';
import { serveLspSocket } from '../lsp/socket';
import { errors } from './responses';

const LspServerInfo = Type.Object({
  language: Type.String(),
  root: Type.String(),
  command: Type.Array(Type.String(), { description: 'What a WebSocket starts in the sandbox' }),
});

function queryToken(service: LspService) {
  return async (request: FastifyRequest): Promise<Principal | null> => {
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') return null;
    const token = (request.query as { token?: unknown } | undefined)?.token;
    if (typeof token !== 'string' || !token) return null;
    return service.redeemToken(token, (request.params as { id: string }).id);
  };
}

export const lspRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const service = new LspService(ctx.host, ctx.sandboxes, ctx.config);
    /** The server a WebSocket upgrade started in its preHandler, for its handler. */
    const started = new WeakMap<FastifyRequest, LanguageServerProcess>();
    fastify.addHook('onClose', async () => service.warm.close().catch(() => undefined));

    const socketRoute: RouteOptions = {
      method: 'GET',
      url: '/v1/sandboxes/:id/lsp',
      config: { queryToken: queryToken(service) } as RouteOptions['config'],
      schema: {
        tags: ['lsp'],
        summary:
          'With a WebSocket upgrade: LSP JSON-RPC (one message per text frame) to a language server started in the sandbox (see docs/lsp.md). Without: checks that the server and the root are there',
        params: IdParams,
        querystring: LspWsQuery,
        response: { 200: LspServerInfo, ...errors },
      },
      // The server is started before the upgrade: a missing one or a bad root is an HTTP error.
      preHandler: async (req) => {
        if (!req.ws) return;
        const { id } = req.params as { id: string };
        const { language, root } = req.query as { language: LspLanguage; root?: string };
        const server = await service.open(req.principal!.orgId, id, language, root);
        started.set(req, server);
        // An upgrade that never reaches the handler (the client left) does not keep it.
        setTimeout(() => {
          if (started.get(req) === server) void server.stop();
        }, 30_000).unref();
      },
      handler: async (req) => {
        const { id } = req.params as { id: string };
        const { language, root } = req.query as { language: LspLanguage; root?: string };
        return service.describe(req.principal!.orgId, id, language, root);
      },
      wsHandler: (socket: WebSocket, req: FastifyRequest) => {
        const { id } = req.params as { id: string };
        const orgId = req.principal!.orgId;
        const server = started.get(req);
        if (!server) return socket.close(1011, 'no language server');
        started.delete(req);
        serveLspSocket(socket, server, () => void service.activity(orgId, id).catch(() => null));
      },
    };
    fastify.route(socketRoute);

    app.post(
      '/v1/sandboxes/:id/lsp/token',
      {
        schema: {
          tags: ['lsp'],
          summary:
            "A short-lived token that opens one of this sandbox's language server WebSockets, as ?token= (for browsers)",
          params: IdParams,
          body: LspTokenRequest,
          response: { 201: LspToken, ...errors },
        },
      },
      async (req, reply) =>
        reply
          .status(201)
          .send(await service.issueToken(req.principal!, req.params.id, req.body.ttl_seconds)),
    );

    app.post(
      '/v1/sandboxes/:id/lsp/:action',
      {
        schema: {
          tags: ['lsp'],
          summary:
            'Ask a warm language server about a file: definition, references, hover, diagnostics or symbols, answered as short text (path:line:col lines)',
          params: LspActionParams,
          body: LspActionRequest,
          response: { 200: LspActionResult, ...errors },
        },
      },
      async (req) =>
        service.action(req.principal!.orgId, req.params.id, req.params.action, req.body),
    );
  };
