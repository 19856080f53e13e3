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

function toApi(t: TemplateRecord): TemplateT {
  const {
    id,
    name,
    state,
    default_cpu,
    default_memory_mb,
    max_cpu,
    max_memory_mb,
    rootfs_bytes,
    snapshot_bytes,
    built_at,
  } = t;
  return {
    id,
    name,
    state,
    default_cpu,
    default_memory_mb,
    max_cpu,
    max_memory_mb,
    rootfs_bytes,
    snapshot_bytes,
    built_at,
  };
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
