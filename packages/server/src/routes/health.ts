import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ErrorResponse, Health } from '@warren/protocol';
import type { AppContext } from '../context';
import { leads } from '../hosts/router';

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
      async () => {
        const info = await ctx.host.info();
        return {
          status: 'ok' as const,
          version: ctx.version,
          runtime: {
            driver: info.driver,
            version: info.runtime_version,
            volume_clone: info.capabilities.volume_clone,
          },
          hosts: [{ id: info.id, ...(await ctx.host.capacity()) }],
          uptime_seconds: (Date.now() - ctx.startedAt) / 1000,
          leader: leads(ctx.host),
        };
      },
    );
  };
