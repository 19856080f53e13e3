/** Exec and background processes: everything runs through the guest agent in the sandbox. */
import { PassThrough } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  ExecRequest,
  ExecResult,
  IdParams,
  OutputQuery,
  PidParams,
  ProcessInfo,
  ProcessList,
  SignalRequest,
  StdinRequest,
  WarrenError,
  type ExecEvent,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { OUT_OF_MEMORY } from '../sandboxes/dead';
import { NoContent, errors } from './responses';

/** What POST /exec keeps of each output stream; /exec/stream has no such limit. */
export const EXEC_OUTPUT_LIMIT = 16 * 1024 * 1024;
const TRUNCATED = `\n[warren: output truncated at ${EXEC_OUTPUT_LIMIT} characters; use /exec/stream for more]\n`;

function capped(kept: string, more: string): string {
  if (kept.length > EXEC_OUTPUT_LIMIT) return kept; // already truncated
  const next = kept + more;
  return next.length <= EXEC_OUTPUT_LIMIT ? next : next.slice(0, EXEC_OUTPUT_LIMIT) + TRUNCATED;
}

/** Whether the host's OOM killer killed the sandbox (or it was recorded stopped for that). */
async function outOfMemory(ctx: AppContext, id: string): Promise<boolean> {
  if (await ctx.host.sandboxes.oomKilled(id).catch(() => false)) return true;
  return (await ctx.store.getSandboxById(id))?.stop_reason === OUT_OF_MEMORY;
}

/**
 * Relays events to the client as ndjson. When the client leaves early, `stop`
 * is aborted: for an exec stream that kills the process.
 */
function relay(
  reply: FastifyReply,
  events: AsyncIterable<ExecEvent>,
  stop: AbortController,
  onEnd: () => Promise<void>,
): FastifyReply {
  const out = new PassThrough();
  void (async () => {
    try {
      for await (const event of events) out.write(JSON.stringify(event) + '\n');
    } catch {
      out.write(
        JSON.stringify({
          type: 'error',
          code: 'GUEST_UNAVAILABLE',
          message: 'sandbox agent stream broke',
        }) + '\n',
      );
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

export const execRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/v1/sandboxes/:id/exec',
      {
        schema: {
          tags: ['exec'],
          summary:
            'Run a command and wait for its result (with background:true, start it and return at once)',
          params: IdParams,
          body: ExecRequest,
          response: { 200: ExecResult, 201: ProcessInfo, ...errors },
        },
      },
      async (req, reply) => {
        const { orgId } = req.principal!;
        if (req.body.background)
          return reply.status(201).send(await ctx.guest.start(orgId, req.params.id, req.body));
        const events = await ctx.guest.exec(orgId, req.params.id, req.body);
        let pid = 0;
        let stdout = '';
        let stderr = '';
        for await (const event of events) {
          if (event.type === 'start') pid = event.pid;
          else if (event.type === 'stdout') stdout = capped(stdout, event.data);
          else if (event.type === 'stderr') stderr = capped(stderr, event.data);
          else if (event.type === 'exit') {
            if (event.duration_ms > 1000) await ctx.guest.activity(orgId, req.params.id);
            return {
              pid,
              exit_code: event.exit_code,
              signal: event.signal,
              stdout,
              stderr,
              timed_out: event.timed_out,
              duration_ms: event.duration_ms,
            };
          }
        }
        if (await outOfMemory(ctx, req.params.id))
          throw new WarrenError(
            'SANDBOX_OUT_OF_MEMORY',
            'the sandbox ran out of memory (past its memory_mb) and was killed with everything in it',
          );
        throw new WarrenError(
          'GUEST_UNAVAILABLE',
          'the sandbox agent ended the exec stream without an exit status',
        );
      },
    );

    app.post(
      '/v1/sandboxes/:id/exec/stream',
      {
        schema: {
          tags: ['exec'],
          summary:
            'Run a command and stream its output as newline-delimited JSON events (start, stdout, stderr, exit)',
          params: IdParams,
          body: ExecRequest,
          response: errors,
        },
      },
      async (req, reply) => {
        const { orgId } = req.principal!;
        const stop = new AbortController();
        const events = await ctx.guest.exec(orgId, req.params.id, req.body, stop.signal);
        return relay(reply, events, stop, () => ctx.guest.activity(orgId, req.params.id));
      },
    );

    app.post(
      '/v1/sandboxes/:id/processes',
      {
        schema: {
          tags: ['processes'],
          summary: 'Start a background process',
          params: IdParams,
          body: ExecRequest,
          response: { 201: ProcessInfo, ...errors },
        },
      },
      async (req, reply) =>
        reply
          .status(201)
          .send(await ctx.guest.start(req.principal!.orgId, req.params.id, req.body)),
    );

    app.get(
      '/v1/sandboxes/:id/processes',
      {
        schema: {
          tags: ['processes'],
          summary: 'List background processes',
          params: IdParams,
          response: { 200: ProcessList, ...errors },
        },
      },
      async (req) => ({
        items: await ctx.guest.processes(req.principal!.orgId, req.params.id),
      }),
    );

    app.get(
      '/v1/sandboxes/:id/processes/:pid',
      {
        schema: {
          tags: ['processes'],
          summary: 'Get a background process',
          params: PidParams,
          response: { 200: ProcessInfo, ...errors },
        },
      },
      async (req) => ctx.guest.process(req.principal!.orgId, req.params.id, req.params.pid),
    );

    app.get(
      '/v1/sandboxes/:id/processes/:pid/output',
      {
        schema: {
          tags: ['processes'],
          summary:
            'Reattach: replay buffered output, then follow it live until exit (ndjson events)',
          params: PidParams,
          querystring: OutputQuery,
          response: errors,
        },
      },
      async (req, reply) => {
        const { orgId } = req.principal!;
        const stop = new AbortController();
        const events = await ctx.guest.output(orgId, req.params.id, req.params.pid, {
          follow: req.query.follow,
          signal: stop.signal,
        });
        return relay(reply, events, stop, () => ctx.guest.activity(orgId, req.params.id));
      },
    );

    app.post(
      '/v1/sandboxes/:id/processes/:pid/stdin',
      {
        schema: {
          tags: ['processes'],
          summary: 'Write to a background process stdin',
          params: PidParams,
          body: StdinRequest,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        await ctx.guest.writeStdin(req.principal!.orgId, req.params.id, req.params.pid, req.body);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/v1/sandboxes/:id/processes/:pid/signal',
      {
        schema: {
          tags: ['processes'],
          summary: 'Send a signal to a process group',
          params: PidParams,
          body: SignalRequest,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        await ctx.guest.signal(req.principal!.orgId, req.params.id, req.params.pid, req.body);
        return reply.status(204).send(null);
      },
    );
  };
