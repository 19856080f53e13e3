import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AuditEvent, AuditQuery, ErrorResponse } from '@warren/protocol';
import type { AppContext } from '../context';

export const auditRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/v1/audit',
      {
        schema: {
          tags: ['system'],
          summary:
            "Audit events of your organisation (or, for the install's admin, of `org_id`), newest first, with filters",
          querystring: AuditQuery,
          response: {
            200: Type.Object({
              items: Type.Array(AuditEvent),
              next_before: Type.Union([Type.Integer(), Type.Null()], {
                description: 'Pass as `before` for the next page; null on the last page',
              }),
            }),
            404: ErrorResponse,
          },
        },
      },
      async (req) => {
        const { limit, org_id, ...filter } = req.query;
        const orgId = await ctx.keys.auditOrganisation(req.principal!, org_id);
        const items = await ctx.audit.list(orgId, filter, limit);
        const last = items[items.length - 1];
        return { items, next_before: items.length === limit && last ? last.id : null };
      },
    );
  };
