/**
 * The HTTP API (Fastify). Fastify was chosen for its JSON-schema validation
 * (the TypeBox schemas in @warren/protocol validate requests directly and
 * generate the OpenAPI document through @fastify/swagger), its streaming
 * replies, structured logging with request ids (pino), and its speed.
 */
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { WarrenError, newId } from '@warren/protocol';
import type { Principal } from './auth';
import type { AppContext } from './context';
import { errorHandler, toWarrenError } from './errors';
import { codeRoutes } from './routes/code';
import { execRoutes } from './routes/exec';
import { fileRoutes } from './routes/files';
import { healthRoutes } from './routes/health';
import { sandboxRoutes } from './routes/sandboxes';
import { templateRoutes } from './routes/templates';
import { snapshotRoutes } from './routes/snapshots';
import { auditRoutes } from './routes/audit';
import { previewRoutes } from './routes/preview';
import { PreviewProxy } from './preview/proxy';
import { previewServerFactory } from './preview/server';
import { networkRoutes } from './routes/network';
import { volumeRoutes } from './routes/volumes';
import { databaseRoutes } from './routes/databases';
import { keyRoutes } from './routes/keys';
import { quotaRoutes } from './routes/quotas';
import { lspRoutes } from './routes/lsp';
import { ptyRoutes, WEBSOCKET_OPTIONS } from './routes/pty';
import { accessHooks, declareRouteScopes } from './keys/hooks';
import { metricsHooks } from './metrics/hooks';
import { metricsRoutes } from './routes/metrics';
import { mcpRoutes } from './routes/mcp';
import { usageRoutes } from './routes/usage';
import { hostRoutes } from './routes/hosts';
import { webhookRoutes } from './routes/webhooks';
import { requestCauses } from './webhooks/cause';
import { registerDashboard } from './dashboard';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    auditResource: { type: string; id: string } | null;
    errorCode: string | null;
  }
}

export type App = FastifyInstance<any, any, any, any, TypeBoxTypeProvider>; // eslint-disable-line @typescript-eslint/no-explicit-any

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

async function readJsonBody(payload: Readable, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    size += (chunk as Buffer).length;
    if (size > limit)
      throw new WarrenError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new WarrenError('INVALID_JSON', 'request body is not valid JSON');
  }
}

export async function buildApp(
  ctx: AppContext,
  logger: boolean | object = true,
  tls?: { cert: string; key: string },
): Promise<App> {
  const preview = new PreviewProxy(ctx);
  const apiUpgrades = new EventEmitter();
  const app = Fastify({
    logger,
    serverFactory: previewServerFactory(preview, tls, apiUpgrades),
    bodyLimit: 32 * 1024 * 1024,
    genReqId: () => newId('request'),
    requestIdHeader: false,
    ajv: {
      customOptions: {
        removeAdditional: false,
        coerceTypes: 'array',
        useDefaults: true,
        allErrors: false,
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  preview.log = app.log;
  app.addHook('preClose', async () => preview.close());

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Warren API',
        version: ctx.version,
        description:
          'Sandboxes for AI agents on gVisor, driven over REST. Every route but /v1/health needs `Authorization: Bearer <token>`.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  // WebSockets (terminals) through @fastify/websocket, the Fastify plugin over
  // `ws`: upgrades go through the same routing, hooks and auth as requests.
  await app.register(websocket, {
    options: { ...WEBSOCKET_OPTIONS, server: apiUpgrades as never },
  });

  app.decorateRequest('principal', null);
  app.decorateRequest('auditResource', null);
  app.decorateRequest('errorCode', null);

  // Routes marked rawBody (file uploads) get the body as a stream, whatever its
  // type: it is piped to the sandbox, never buffered. Everything else is JSON.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    const config = request.routeOptions.config as { rawBody?: boolean } | undefined;
    if (config?.rawBody) return done(null, payload);
    if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(request.headers['content-type'] ?? ''))
      return done(null, payload);
    readJsonBody(payload, request.routeOptions.bodyLimit ?? 32 * 1024 * 1024).then(
      (body) => done(null, body),
      (err: Error) => done(err, undefined),
    );
  });

  accessHooks(app, ctx);
  metricsHooks(app, ctx.metrics);
  requestCauses(app);

  app.addHook('preValidation', async (request) => {
    const schema = request.routeOptions.schema;
    // A POST without a body means "all defaults".
    if (schema?.body && request.body === undefined) request.body = {};
    if (schema?.body && request.body instanceof Readable) {
      throw new WarrenError(
        'UNSUPPORTED_MEDIA_TYPE',
        'send the body as JSON with Content-Type: application/json',
      );
    }
  });

  // Every state-changing request leaves an audit event: who, what, which resource, result.
  app.addHook('onResponse', async (request, reply) => {
    if (!STATE_CHANGING.has(request.method)) return;
    // An MCP message is not itself a change: the tool calls it makes are audited as /v1 requests.
    if (request.routeOptions.url === '/mcp') return;
    const params = request.params as { id?: string } | undefined;
    const resource =
      request.auditResource ?? (params?.id ? { type: 'sandbox', id: params.id } : null);
    await ctx.audit
      .record({
        at: new Date().toISOString(),
        org_id: request.principal?.orgId ?? null,
        actor: request.principal?.tokenId ?? null,
        action: `${request.method} ${request.routeOptions.url ?? request.url.split('?')[0]}`,
        resource_type: resource?.type ?? null,
        resource_id: resource?.id ?? null,
        status: reply.statusCode,
        error_code: request.errorCode,
        request_id: request.id,
      })
      .catch((err) => request.log.error({ err }, 'audit write failed'));
  });

  app.setErrorHandler((err: Error, request, reply) => {
    request.errorCode = toWarrenError(err).code;
    errorHandler(err, request, reply);
  });
  const dashboard = await registerDashboard(app, ctx.config?.dashboardDir ?? null);
  app.setNotFoundHandler((request, reply) => {
    if (dashboard.fallback(request, reply)) return;
    const e = new WarrenError(
      'NOT_FOUND',
      `no route ${request.method} ${request.url.split('?')[0]}`,
    );
    request.errorCode = e.code;
    void reply.status(404).send(e.toBody(request.id));
  });

  declareRouteScopes(app);
  await app.register(healthRoutes(ctx));
  await app.register(sandboxRoutes(ctx));
  await app.register(execRoutes(ctx));
  await app.register(fileRoutes(ctx));
  await app.register(templateRoutes(ctx));
  await app.register(snapshotRoutes(ctx));
  await app.register(auditRoutes(ctx));
  await app.register(previewRoutes(ctx));
  await app.register(networkRoutes(ctx));
  await app.register(volumeRoutes(ctx));
  await app.register(databaseRoutes(ctx));
  await app.register(keyRoutes(ctx));
  await app.register(usageRoutes(ctx));
  await app.register(metricsRoutes(ctx));
  await app.register(mcpRoutes(ctx));
  await app.register(quotaRoutes(ctx));
  await app.register(webhookRoutes(ctx));
  await app.register(ptyRoutes(ctx));
  await app.register(codeRoutes(ctx));
  await app.register(lspRoutes(ctx));
  await app.register(hostRoutes(ctx));
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
