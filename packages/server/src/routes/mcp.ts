/**
 * /mcp: Warren's tools over the Model Context Protocol's Streamable HTTP
 * transport, stateless (a new server and transport per request, answered as
 * JSON). It is outside /v1, so it authenticates here; the tools then act
 * in-process through the REST routes with the caller's own bearer token, so
 * scopes, restrictions and organisations apply exactly as over REST.
 * `?tools=default,snapshots` picks the tool groups.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createWarrenMcpServer, parseToolGroups } from '@warren/sdk/mcp';
import type { AppContext } from '../context';
import { injectFetch } from '../inject-fetch';

const hide = { schema: { hide: true } };

const jsonRpcError = (code: number, message: string) => ({
  jsonrpc: '2.0',
  error: { code, message },
  id: null,
});

export const mcpRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const authenticate = async (req: FastifyRequest) => {
      req.principal = await ctx.keys.authenticateFrom(req.ip, req.headers.authorization);
    };

    app.post('/mcp', hide, async (req: FastifyRequest, reply: FastifyReply) => {
      await authenticate(req);
      const groups = parseToolGroups((req.query as { tools?: string }).tools);
      const server = createWarrenMcpServer(
        {
          // Never dialled: injectFetch answers in-process; the URL only shapes paths.
          apiUrl: 'http://warren.internal',
          apiKey: /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1],
          fetch: injectFetch(app, req.ip),
        },
        { groups, version: ctx.version },
      );
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      reply.hijack();
      reply.raw.once('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(req.raw, reply.raw, req.body);
      } catch (err) {
        // The reply is ours after hijack(): answer rather than leave the client waiting.
        req.log.error({ err }, 'MCP request failed');
        if (!reply.raw.headersSent)
          reply.raw
            .writeHead(500, { 'content-type': 'application/json' })
            .end(JSON.stringify(jsonRpcError(-32603, 'internal error')));
        else reply.raw.destroy();
      }
    });

    // Stateless: no server-sent stream to open (GET) and no session to end (DELETE).
    const notAllowed = async (req: FastifyRequest, reply: FastifyReply) => {
      await authenticate(req);
      return reply
        .code(405)
        .header('allow', 'POST')
        .send(jsonRpcError(-32000, 'this MCP endpoint is stateless: POST only'));
    };
    app.get('/mcp', hide, notAllowed);
    app.delete('/mcp', hide, notAllowed);
  };
