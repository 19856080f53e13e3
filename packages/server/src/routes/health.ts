import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ErrorResponse, Health } from '@warren/protocol';
import type { AppContext } from '../context';

export const healthRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/v1/health',
      {
        schema: {
          tags: ['system'],
          summary: 'Liveness and capacity; no token needed',
          security: [],
          response: { 200: Health, 500: ErrorResponse },
        },
      },
      async () => ({
        status: 'ok' as const,
        version: ctx.version,
        runtime: { driver: ctx.host.driver.name, version: ctx.runtimeVersion },
        hosts: [{ id: ctx.host.id, ...ctx.host.capacity() }],
        uptime_seconds: (Date.now() - ctx.startedAt) / 1000,
      }),
    );
  };
