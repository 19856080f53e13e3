import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  ErrorResponse,
  NameParams,
  Template,
  TemplateList,
  type Template as TemplateT,
} from '@warren/protocol';
import type { TemplateRecord } from '@warren/host-agent';
import type { AppContext } from '../context';

/** The API view of a template: its host-side paths and build keys stay internal. */
function toApi(t: TemplateRecord): TemplateT {
  const { rootfs, snapshot, guest_key, runtime_version, ...api } = t;
  return api;
}

export const templateRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/v1/templates',
      {
        schema: { tags: ['templates'], summary: 'List templates', response: { 200: TemplateList } },
      },
      async () => ({
        items: (await ctx.host.templates.list()).map(toApi),
      }),
    );
    app.get(
      '/v1/templates/:name',
      {
        schema: {
          tags: ['templates'],
          summary: 'Get a template',
          params: NameParams,
          response: { 200: Template, 404: ErrorResponse },
        },
      },
      async (req) => toApi(await ctx.host.templates.get(req.params.name)),
    );
  };
