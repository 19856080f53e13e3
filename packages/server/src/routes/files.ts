/** File routes: every byte goes through the guest agent; no route touches a host path. */
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  FileInfo,
  FileList,
  FileWatchEvent,
  IdParams,
  MkdirRequest,
  PathQuery,
  RemoveQuery,
  RenameRequest,
  WatchQuery,
  WriteQuery,
  WriteResult,
  WarrenError,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';

/** Blank lines on a quiet watch stream (readers skip them). */
const KEEPALIVE_MS = 25_000;

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

    app.get(
      '/v1/sandboxes/:id/files/watch',
      {
        schema: {
          tags: ['files'],
          summary:
            'Watch a directory: create, write, remove and rename events as newline-delimited JSON until the client disconnects',
          params: IdParams,
          querystring: WatchQuery,
          produces: ['application/x-ndjson'],
          response: {
            200: {
              description:
                'One FileWatchEvent a line; the answer starts once the watch is in place.',
              content: { 'application/x-ndjson': { schema: FileWatchEvent } },
            },
            ...errors,
          },
        },
      },
      async (req, reply) => {
        const stop = new AbortController();
        const { path, recursive } = req.query;
        const events = await ctx.guest.watch(req.principal!.orgId, req.params.id, path, {
          recursive: recursive === true,
          signal: stop.signal,
        });
        const out = new PassThrough();
        // A blank line first, so the answer's headers go out now (the watch is in place), and
        // another every KEEPALIVE_MS so proxies do not take a quiet watch for a dead one.
        out.write('\n');
        const keepalive = setInterval(() => out.write('\n'), KEEPALIVE_MS);
        reply.raw.on('close', () => {
          clearInterval(keepalive);
          stop.abort();
        });
        void (async () => {
          try {
            for await (const e of events) out.write(`${JSON.stringify(e)}\n`);
          } catch {
            // the sandbox's agent went away: the stream ends, the client may watch again
          }
          clearInterval(keepalive);
          out.end();
        })();
        return reply
          .header('content-type', 'application/x-ndjson')
          .header('cache-control', 'no-store')
          .send(out as never);
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
