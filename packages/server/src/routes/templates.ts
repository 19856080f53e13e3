import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  ErrorResponse,
  NameParams,
  Template,
  TemplateBuildRequest,
  TemplateImageQuery,
  TemplateList,
  WarrenError,
  type Template as TemplateT,
  type TemplateBuildEvent,
} from '@warren/protocol';
import type { TemplateRecord } from '@warren/host-agent';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';

/** Largest image upload; larger bodies are cut off with PAYLOAD_TOO_LARGE. */
export const TEMPLATE_UPLOAD_LIMIT = 16 * 1024 ** 3;

/** The API view of a template: its host-side paths and build keys stay internal. */
function toApi(t: TemplateRecord): TemplateT {
  const { rootfs, snapshot, guest_key, runtime_version, ...api } = t;
  return api;
}

/** Sandboxes that still run on a template, and snapshots that restore with its root. */
async function dependents(
  ctx: AppContext,
  name: string,
): Promise<{ sandboxes: number; snapshots: number }> {
  const sbx = await ctx.store.db
    .selectFrom('sandboxes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('template', '=', name)
    .where('state', 'not in', ['stopped', 'error'])
    .executeTakeFirst();
  const snaps = await ctx.store.db
    .selectFrom('snapshots')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('template', '=', name)
    .executeTakeFirst();
  return { sandboxes: Number(sbx?.n ?? 0), snapshots: Number(snaps?.n ?? 0) };
}

async function refuseInUse(ctx: AppContext, name: string, action: string): Promise<void> {
  const d = await dependents(ctx, name);
  if (d.sandboxes + d.snapshots > 0)
    throw new WarrenError(
      'TEMPLATE_IN_USE',
      `cannot ${action} template ${name}: ${d.sandboxes} sandbox(es) and ${d.snapshots} snapshot(s) depend on it`,
      d,
    );
}

type Progress = (line: string, step?: number) => void;

/**
 * Runs a build and streams its log as ndjson. Errors found before the first
 * log line (bad name, missing base, not an image) are ordinary HTTP errors;
 * later ones end the stream with an `error` event.
 */
function streamBuild(
  reply: FastifyReply,
  run: (progress: Progress) => Promise<TemplateRecord>,
): Promise<FastifyReply> {
  return new Promise((resolve, reject) => {
    const out = new PassThrough();
    let started = false;
    const write = (e: TemplateBuildEvent) => out.write(`${JSON.stringify(e)}\n`);
    const begin = () => {
      if (started) return;
      started = true;
      resolve(
        reply
          .header('content-type', 'application/x-ndjson')
          .header('cache-control', 'no-store')
          .send(out),
      );
    };
    run((line, step) => {
      begin();
      write({ type: 'log', line, ...(step !== undefined && { step }) });
    }).then(
      (rec) => {
        begin();
        write({ type: 'done', template: toApi(rec) });
        out.end();
      },
      (err: unknown) => {
        if (!started) return reject(err);
        const e =
          err instanceof WarrenError
            ? err
            : new WarrenError('INTERNAL', err instanceof Error ? err.message : String(err));
        const step = (e.details as { step?: number } | undefined)?.step;
        write({ type: 'error', code: e.code, message: e.message, ...(step && { step }) });
        out.end();
      },
    );
  });
}

/** Copies an upload to a file, refusing it once it passes the limit. */
async function saveUpload(body: Readable, file: string): Promise<void> {
  let size = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > TEMPLATE_UPLOAD_LIMIT)
        return cb(
          new WarrenError(
            'PAYLOAD_TOO_LARGE',
            `image upload is larger than ${TEMPLATE_UPLOAD_LIMIT} bytes`,
          ),
        );
      cb(null, chunk);
    },
  });
  await pipeline(body, limit, createWriteStream(file, { mode: 0o600 }));
  if (size === 0) throw new WarrenError('INVALID_IMAGE', 'the upload is empty');
}

const BuildStream = {
  200: {
    description:
      'Build log, newline-delimited JSON: `log` lines, then one `done` (with the template) or `error`.',
    content: { 'application/x-ndjson': { schema: { type: 'string' } } },
  },
};

export const templateRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const host = ctx.host;
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
      async (req) => {
        const rec = await ctx.host.templates.read(req.params.name);
        if (!rec)
          throw new WarrenError(
            'TEMPLATE_NOT_FOUND',
            `template ${JSON.stringify(req.params.name)} does not exist`,
          );
        return toApi(rec);
      },
    );

    app.post(
      '/v1/templates',
      {
        schema: {
          tags: ['templates'],
          summary:
            'Build a template from a recipe (base + steps) or a server-side image path; streams the build log',
          body: TemplateBuildRequest,
          response: { ...BuildStream, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'template', id: req.body.name };
        return streamBuild(reply, (progress) => host.builder.build(req.body, progress));
      },
    );

    app.post(
      '/v1/templates/:name/image',
      {
        config: { rawBody: true },
        bodyLimit: TEMPLATE_UPLOAD_LIMIT,
        schema: {
          tags: ['templates'],
          summary:
            'Build a template from an uploaded image (OCI layout or `docker save` tar, optionally gzipped); streams the build log',
          params: NameParams,
          querystring: TemplateImageQuery,
          consumes: ['application/x-tar', 'application/octet-stream'],
          response: { ...BuildStream, ...errors },
        },
      },
      async (req, reply) => {
        const { name } = req.params;
        req.auditResource = { type: 'template', id: name };
        const body = req.body as Readable | undefined;
        if (!body || typeof body.pipe !== 'function')
          throw new WarrenError(
            'UNSUPPORTED_MEDIA_TYPE',
            'send the image as a raw body, e.g. Content-Type: application/x-tar',
          );
        const { start, ready, ready_timeout, ...sizing } = req.query;
        // Cheap checks before reading what may be gigabytes.
        if (await host.templates.read(name))
          throw new WarrenError('TEMPLATE_EXISTS', `template ${name} already exists`);
        const uploads = join(host.templates.root, '.uploads');
        await mkdir(uploads, { recursive: true, mode: 0o700 });
        const file = join(uploads, `${randomBytes(8).toString('hex')}.tar`);
        try {
          await saveUpload(body, file);
        } catch (err) {
          await rm(file, { force: true });
          throw err;
        }
        return streamBuild(reply, (progress) =>
          host.builder
            .build(
              {
                name,
                image: { path: file, uploaded: true },
                ...sizing,
                ...(start?.length && { start }),
                ...(ready?.length && {
                  ready: { cmd: ready, ...(ready_timeout && { timeout: ready_timeout }) },
                }),
              },
              progress,
            )
            .finally(() => rm(file, { force: true })),
        );
      },
    );

    app.post(
      '/v1/templates/:name/rebuild',
      {
        schema: {
          tags: ['templates'],
          summary:
            'Build a template again (a built-in one that was never built is built now); streams the build log',
          params: NameParams,
          response: { ...BuildStream, ...errors },
        },
      },
      async (req, reply) => {
        const { name } = req.params;
        req.auditResource = { type: 'template', id: name };
        // A repeated recipe or image build replaces the root that sandboxes and snapshots run on.
        if (await host.builder.buildSpec(name).catch(() => null))
          await refuseInUse(ctx, name, 'rebuild');
        return streamBuild(reply, (progress) => host.rebuildTemplate(name, progress));
      },
    );

    app.delete(
      '/v1/templates/:name',
      {
        schema: {
          tags: ['templates'],
          summary: 'Delete a template (refused while sandboxes or snapshots depend on it)',
          params: NameParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        const { name } = req.params;
        req.auditResource = { type: 'template', id: name };
        if (!(await host.templates.read(name)))
          throw new WarrenError(
            'TEMPLATE_NOT_FOUND',
            `template ${JSON.stringify(name)} does not exist`,
          );
        if (host.builder.isBuilding(name))
          throw new WarrenError('TEMPLATE_IN_USE', `template ${name} is being built`);
        await refuseInUse(ctx, name, 'delete');
        await host.templates.remove(name);
        return reply.status(204).send(null);
      },
    );
  };
