/** Usage: a sandbox's sampled time series, and totals over a range grouped. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  IdParams,
  SandboxMetrics,
  SandboxMetricsQuery,
  UsageQuery,
  UsageReport,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { errors } from './responses';

export const usageRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/v1/sandboxes/:id/metrics',
      {
        schema: {
          tags: ['usage'],
          summary:
            "A sandbox's usage samples (CPU, memory, disk, network) between since and until, with their totals",
          params: IdParams,
          querystring: SandboxMetricsQuery,
          response: { 200: SandboxMetrics, ...errors },
        },
      },
      async (req) => ctx.usage.series(req.principal!, req.params.id, req.query),
    );

    app.get(
      '/v1/usage',
      {
        schema: {
          tags: ['usage'],
          summary:
            "Usage totals between from and to, grouped by organisation, template or label:<key>; the install's admin sees every organisation",
          querystring: UsageQuery,
          response: { 200: UsageReport, ...errors },
        },
      },
      async (req) => ctx.usage.report(req.principal!, req.query),
    );
  };
