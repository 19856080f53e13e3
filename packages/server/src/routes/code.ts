/**
 * The code interpreter (docs/code-interpreter.md): runs stream ndjson
 * CodeEvents; contexts keep state between runs; a running execution can be
 * interrupted by id. A client that leaves a run early interrupts it.
 */
import { PassThrough } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  CodeContext,
  CodeContextCreateRequest,
  CodeContextList,
  CodeContextParams,
  CodeExecutionParams,
  CodeRunRequest,
  IdParams,
  type CodeEvent,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';

/** Relays a run's events as ndjson; a client that leaves aborts `stop` (an interrupt). */
function relay(
  reply: FastifyReply,
  events: AsyncIterable<CodeEvent>,
  stop: AbortController,
  onEnd: () => Promise<void>,
): FastifyReply {
  const out = new PassThrough();
  const write = (e: CodeEvent) => out.write(JSON.stringify(e) + '\n');
  void (async () => {
    let ended = false;
    try {
      for await (const event of events) {
        if (event.type === 'end') ended = true;
        write(event);
      }
    } catch {
      // the guest stream broke: reported below
    }
    if (!ended && !stop.signal.aborted) {
      write({
        type: 'error',
        name: 'GuestUnavailable',
        value: 'the sandbox agent ended the run without its end event',
        traceback: '',
      });
      write({ type: 'end', execution_count: 0, duration_ms: 0, cancelled: null });
    }
    await onEnd().catch(() => undefined);
    out.end();
  })();
  reply.raw.on('close', () => stop.abort());
  return reply
    .header('content-type', 'application/x-ndjson')
    .header('cache-control', 'no-store')
    .send(out);
}

export const codeRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/v1/sandboxes/:id/code',
      {
        schema: {
          tags: ['code'],
          summary:
            'Run code in a context and stream its events as ndjson (start, stdout, stderr, result, error, end)',
          params: IdParams,
          body: CodeRunRequest,
          response: errors,
        },
      },
      async (req, reply) => {
        const { orgId } = req.principal!;
        const { sandbox, api } = await ctx.guest.code(orgId, req.params.id);
        const stop = new AbortController();
        const events = await api.run(sandbox, req.body, { signal: stop.signal });
        return relay(reply, events, stop, () => ctx.guest.activity(orgId, req.params.id));
      },
    );

    app.post(
      '/v1/sandboxes/:id/code/contexts',
      {
        schema: {
          tags: ['code'],
          summary: 'Create a code context (its own kernel or interpreter)',
          params: IdParams,
          body: CodeContextCreateRequest,
          response: { 201: CodeContext, ...errors },
        },
      },
      async (req, reply) => {
        const { sandbox, api } = await ctx.guest.code(req.principal!.orgId, req.params.id);
        return reply.status(201).send(await api.createContext(sandbox, req.body));
      },
    );

    app.get(
      '/v1/sandboxes/:id/code/contexts',
      {
        schema: {
          tags: ['code'],
          summary: 'List code contexts',
          params: IdParams,
          response: { 200: CodeContextList, ...errors },
        },
      },
      async (req) => {
        const { sandbox, api } = await ctx.guest.code(req.principal!.orgId, req.params.id);
        return { items: await api.listContexts(sandbox) };
      },
    );

    app.post(
      '/v1/sandboxes/:id/code/contexts/:context_id/restart',
      {
        schema: {
          tags: ['code'],
          summary: "Restart a context's kernel (its state is lost)",
          params: CodeContextParams,
          response: { 200: CodeContext, ...errors },
        },
      },
      async (req) => {
        const { sandbox, api } = await ctx.guest.code(req.principal!.orgId, req.params.id);
        return api.restartContext(sandbox, req.params.context_id);
      },
    );

    app.delete(
      '/v1/sandboxes/:id/code/contexts/:context_id',
      {
        schema: {
          tags: ['code'],
          summary: 'Delete a code context and stop its kernel',
          params: CodeContextParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        const { sandbox, api } = await ctx.guest.code(req.principal!.orgId, req.params.id);
        await api.deleteContext(sandbox, req.params.context_id);
        return reply.status(204).send(null);
      },
    );

    app.delete(
      '/v1/sandboxes/:id/code/executions/:execution_id',
      {
        schema: {
          tags: ['code'],
          summary: 'Interrupt a running execution (a kernel interrupt; the context stays)',
          params: CodeExecutionParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        const { sandbox, api } = await ctx.guest.code(req.principal!.orgId, req.params.id);
        await api.interrupt(sandbox, req.params.execution_id);
        return reply.status(204).send(null);
      },
    );
  };
