/**
 * GET /metrics: Prometheus metrics of the whole install. It is outside /v1
 * (where scrapers look for it), so the access hooks leave it alone and it
 * authenticates here: an admin key of the install's own organisation, since
 * the figures cover every organisation.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import { WarrenError, type Scope } from '@warren/protocol';
import type { AppContext } from '../context';
import { ROUTE_SCOPES } from '../keys/route-scopes';
import { requireScopes } from '../keys/scopes';
import { errors } from './responses';

export const metricsRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/metrics',
      {
        schema: {
          tags: ['system'],
          produces: ['text/plain'],
          summary:
            "Prometheus metrics (text exposition format); needs an admin key of the install's organisation",
          response: {
            200: Type.String({ description: 'Prometheus text format 0.0.4' }),
            ...errors,
          },
        },
      },
      async (req, reply) => {
        const p = await ctx.keys.authenticate(req.headers.authorization);
        req.principal = p;
        requireScopes(p.scopes, ROUTE_SCOPES['GET /metrics'] as Scope[]);
        if (!p.installAdmin)
          throw new WarrenError(
            'MISSING_SCOPE',
            "metrics cover every organisation: they need an admin key of the install's organisation",
            { missing_scope: 'admin' },
          );
        const { contentType, body } = await ctx.metrics.scrape();
        return reply.type(contentType).send(body);
      },
    );
  };
