import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { IdParams, PreviewToken } from '@warren/protocol';
import type { AppContext } from '../context';
import { errors } from './responses';

export const previewRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/v1/sandboxes/:id/preview-token',
      {
        schema: {
          tags: ['preview'],
          summary:
            'Rotate the preview token of a sandbox created with preview_auth: the old one stops working',
          params: IdParams,
          response: { 200: PreviewToken, ...errors },
        },
      },
      async (req) => ctx.sandboxes.rotatePreviewToken(req.principal!.orgId, req.params.id),
    );
  };
