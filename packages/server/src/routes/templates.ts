import { PassThrough, type Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  ErrorResponse,
  NameParams,
  TEMPLATE_UPLOAD_LIMIT,
  Template,
  TemplateBuildRequest,
  TemplateImageQuery,
  TemplateList,
  WarrenError,
  type Template as TemplateT,
  type TemplateBuildEvent,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { reportBuild } from '../webhooks/events';
import { NoContent, errors } from './responses';

export { TEMPLATE_UPLOAD_LIMIT };

type Progress = (line: string, step?: number) => void;

/**
 * Runs a build and streams its log as ndjson. Errors found before the first
 * log line (bad name, missing base, not an image) are ordinary HTTP errors;
 * later ones end the stream with an `error` event.
 */
function streamBuild(
  reply: FastifyReply,
  run: (progress: Progress) => Promise<TemplateT>,
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
        write({ type: 'done', template: rec });
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
    app.get(
      '/v1/templates',
      {
        schema: { tags: ['templates'], summary: 'List templates', response: { 200: TemplateList } },
      },
      async (req) => ({ items: await ctx.templates.list(req.principal!.orgId) }),
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
      async (req) => ctx.templates.get(req.principal!.orgId, req.params.name),
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
        const orgId = req.principal!.orgId;
        return streamBuild(
          reply,
          reportBuild(ctx.webhooks, req.log, orgId, req.body.name, (progress) =>
            ctx.templates.build(orgId, req.body, progress),
          ),
        );
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
        // Cheap checks before reading what may be gigabytes.
        await ctx.templates.checkNew(req.principal!.orgId, name);
        const orgId = req.principal!.orgId;
        return streamBuild(
          reply,
          reportBuild(ctx.webhooks, req.log, orgId, name, (progress) =>
            ctx.templates.buildFromImage(orgId, name, body, req.query, progress),
          ),
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
        await ctx.templates.checkWritable(req.principal!, name);
        await ctx.templates.checkRebuild(name);
        return streamBuild(
          reply,
          reportBuild(ctx.webhooks, req.log, req.principal!.orgId, name, (progress) =>
            ctx.templates.rebuild(name, progress),
          ),
        );
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
        await ctx.templates.remove(req.principal!, name);
        return reply.status(204).send(null);
      },
    );
  };
