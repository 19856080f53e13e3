import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context';

const AuditEvent = Type.Object({
  at: Type.String(),
  org_id: Type.Union([Type.String(), Type.Null()]),
  actor: Type.Union([Type.String(), Type.Null()]),
  action: Type.String(),
  resource_type: Type.Union([Type.String(), Type.Null()]),
  resource_id: Type.Union([Type.String(), Type.Null()]),
  status: Type.Integer(),
  error_code: Type.Union([Type.String(), Type.Null()]),
  request_id: Type.String(),
});

export const auditRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/v1/audit',
      {
        schema: {
          tags: ['system'],
          summary: 'Recent audit events of your organisation, newest first',
          querystring: Type.Object(
            { limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }) },
            { additionalProperties: false },
          ),
          response: { 200: Type.Object({ items: Type.Array(AuditEvent) }) },
        },
      },
      async (req) => ({
        items: await ctx.audit.list(req.principal!.orgId, req.query.limit),
      }),
    );
  };
