/** File routes: every byte goes through the guest agent; no route touches a host path. */
import type { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  FileInfo,
  FileList,
  IdParams,
  MkdirRequest,
  PathQuery,
  RemoveQuery,
  RenameRequest,
  WriteQuery,
  WriteResult,
  WarrenError,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';

const Bytes = Type.String({ format: 'binary', description: 'The file content' });

export const fileRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/v1/sandboxes/:id/files',
      {
        schema: {
          tags: ['files'],
          summary: 'Download a file (streamed, binary-safe)',
          params: IdParams,
          querystring: PathQuery,
          produces: ['application/octet-stream'],
          response: { 200: Bytes, ...errors },
        },
      },
      async (req, reply) => {
        const { orgId } = req.principal!;
        const { size, stream } = await ctx.guest.readFile(orgId, req.params.id, req.query.path);
        reply.raw.on('close', () => stream.destroy());
        return reply
          .header('content-length', size)
          .header('content-type', 'application/octet-stream')
          .send(stream as never);
      },
    );

    app.put(
      '/v1/sandboxes/:id/files',
      {
        config: { rawBody: true },
        schema: {
          tags: ['files'],
          summary: 'Upload a file (raw body, streamed; parent directories are created)',
          params: IdParams,
          querystring: WriteQuery,
          consumes: ['application/octet-stream'],
          response: { 200: WriteResult, ...errors },
        },
      },
      async (req) => {
        const body = req.body as Readable | undefined;
        if (!body || typeof (body as Readable).pipe !== 'function') {
          throw new WarrenError(
            'UNSUPPORTED_MEDIA_TYPE',
            'send the file as a raw body, e.g. Content-Type: application/octet-stream',
          );
        }
        const { orgId } = req.principal!;
        return ctx.guest.writeFile(orgId, req.params.id, req.query.path, body, req.query.mode);
      },
    );

    app.get(
      '/v1/sandboxes/:id/files/list',
      {
        schema: {
          tags: ['files'],
          summary: 'List a directory',
          params: IdParams,
          querystring: PathQuery,
          response: { 200: FileList, ...errors },
        },
      },
      async (req) => {
        return ctx.guest.list(req.principal!.orgId, req.params.id, req.query.path);
      },
    );

    app.get(
      '/v1/sandboxes/:id/files/stat',
      {
        schema: {
          tags: ['files'],
          summary: 'Stat a path',
          params: IdParams,
          querystring: PathQuery,
          response: { 200: FileInfo, ...errors },
        },
      },
      async (req) => {
        return ctx.guest.stat(req.principal!.orgId, req.params.id, req.query.path);
      },
    );

    app.post(
      '/v1/sandboxes/:id/files/mkdir',
      {
        schema: {
          tags: ['files'],
          summary: 'Make a directory',
          params: IdParams,
          body: MkdirRequest,
          response: { 200: FileInfo, ...errors },
        },
      },
      async (req) => {
        return ctx.guest.mkdir(req.principal!.orgId, req.params.id, req.body);
      },
    );

    app.post(
      '/v1/sandboxes/:id/files/rename',
      {
        schema: {
          tags: ['files'],
          summary: 'Rename or move a path',
          params: IdParams,
          body: RenameRequest,
          response: { 200: FileInfo, ...errors },
        },
      },
      async (req) => {
        return ctx.guest.rename(req.principal!.orgId, req.params.id, req.body);
      },
    );

    app.delete(
      '/v1/sandboxes/:id/files',
      {
        schema: {
          tags: ['files'],
          summary: 'Remove a file or directory',
          params: IdParams,
          querystring: RemoveQuery,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        const { path, recursive } = req.query;
        await ctx.guest.remove(req.principal!.orgId, req.params.id, path, recursive === true);
        return reply.status(204).send(null);
      },
    );
  };
