/** Named persistent volumes: create, list, get, delete. Attach them at sandbox create. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { CreateVolumeRequest, Volume, VolumeList, VolumeParams } from '@warren/protocol';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';

export const volumeRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/v1/volumes',
      {
        schema: {
          tags: ['volumes'],
          summary: 'Create a named volume with a size limit (ext4, sparse on the host)',
          body: CreateVolumeRequest,
          response: { 201: Volume, ...errors },
        },
      },
      async (req, reply) => {
        const volume = await ctx.volumes.create(req.principal!.orgId, req.body);
        req.auditResource = { type: 'volume', id: volume.id };
        return reply.status(201).send(volume);
      },
    );

    app.get(
      '/v1/volumes',
      {
        schema: {
          tags: ['volumes'],
          summary: 'List volumes, by name',
          response: { 200: VolumeList, ...errors },
        },
      },
      async (req) => ({ items: await ctx.volumes.list(req.principal!.orgId) }),
    );

    app.get(
      '/v1/volumes/:name',
      {
        schema: {
          tags: ['volumes'],
          summary: 'Get a volume by name or id, with the sandboxes it is attached to',
          params: VolumeParams,
          response: { 200: Volume, ...errors },
        },
      },
      async (req) =>
        ctx.volumes.toApi(await ctx.volumes.row(req.principal!.orgId, req.params.name)),
    );

    app.delete(
      '/v1/volumes/:name',
      {
        schema: {
          tags: ['volumes'],
          summary: 'Delete a volume and its data; refused while attached (VOLUME_IN_USE)',
          params: VolumeParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'volume', id: req.params.name };
        const id = await ctx.volumes.delete(req.principal!.orgId, req.params.name);
        req.auditResource = { type: 'volume', id };
        return reply.status(204).send(null);
      },
    );
  };
