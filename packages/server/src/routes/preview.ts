import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { IdParams, PreviewToken, WarrenError } from '@warren/protocol';
import type { AppContext } from '../context';
import { hashToken } from '../auth';
import { newPreviewToken, previewUrl } from '../preview/token';
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
      async (req) => {
        const row = await ctx.sandboxes.row(req.principal!.orgId, req.params.id);
        if (row.state === 'stopped')
          throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${row.id} is stopped`);
        if (row.preview_auth !== 1)
          throw new WarrenError(
            'INVALID_STATE',
            `sandbox ${row.id} was created without preview_auth: its preview URLs need no token`,
          );
        const token = newPreviewToken();
        await ctx.store.updateSandbox(row.id, { preview_token_hash: hashToken(token) });
        return {
          sandbox_id: row.id,
          preview_token: token,
          preview_url: previewUrl(ctx.config.previewUrl, row.id),
        };
      },
    );
  };
