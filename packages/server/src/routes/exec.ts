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
  GUEST_PATHS,
  WarrenError,
  type GuestProcessStart,
  type ExecRequest as ExecRequestT,
} from '@warren/protocol';
import { errorFrom, readText, type GuestChannel, type GuestResponse } from '@warren/host-agent';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';
import { execEvents } from '../ndjson';

/** What POST /exec keeps of each output stream; /exec/stream has no such limit. */
export const EXEC_OUTPUT_LIMIT = 16 * 1024 * 1024;
const TRUNCATED = `\n[warren: output truncated at ${EXEC_OUTPUT_LIMIT} characters; use /exec/stream for more]\n`;

function capped(kept: string, more: string): string {
  if (kept.length > EXEC_OUTPUT_LIMIT) return kept; // already truncated
  const next = kept + more;
  return next.length <= EXEC_OUTPUT_LIMIT ? next : next.slice(0, EXEC_OUTPUT_LIMIT) + TRUNCATED;
}

function toGuest(body: ExecRequestT, background: boolean): GuestProcessStart {
  return {
    cmd: body.cmd,
    args: body.args ?? [],
    env: body.env,
    cwd: body.cwd,
    stdin: body.stdin,
    timeout_ms: body.timeout !== undefined ? Math.round(body.timeout * 1000) : undefined,
    background,
    user: body.user,
  };
}

async function checked(res: GuestResponse): Promise<GuestResponse> {
  if (res.status >= 400) throw errorFrom(res.status, await readText(res.body));
  return res;
}

/** Relays a guest event stream to the client; if the client leaves early, the process is killed. */
function relay(
  reply: FastifyReply,
  channel: GuestChannel,
  res: GuestResponse,
  killOnAbort: boolean,
  onEnd: () => Promise<void>,
): FastifyReply {
  const out = new PassThrough();
  let pid = 0;
  let exited = false;
  void (async () => {
    try {
      for await (const event of execEvents(res.body)) {
        if (event.type === 'start') pid = event.pid;
        if (event.type === 'exit') exited = true;
        out.write(JSON.stringify(event) + '\n');
      }
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
  reply.raw.on('close', () => {
    if (!exited && killOnAbort && pid) {
      void channel
        .json({
          method: 'POST',
          path: `${GUEST_PATHS.processes}/${pid}/signal`,
          json: { signal: 'SIGKILL' },
        })
        .catch(() => undefined);
    }
    res.body.destroy();
  });
  return reply
    .header('content-type', 'application/x-ndjson')
    .header('cache-control', 'no-store')
    .send(out);
}

export const execRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const startProcess = (channel: GuestChannel, body: ExecRequestT, background: boolean) =>
      channel
        .request({ method: 'POST', path: GUEST_PATHS.processes, json: toGuest(body, background) })
        .then(checked);

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
        const channel = await ctx.sandboxes.use(req.principal!.orgId, req.params.id);
        if (req.body.background) {
          const res = await startProcess(channel, req.body, true);
          return reply.status(201).send(JSON.parse(await readText(res.body)));
        }
        const res = await startProcess(channel, req.body, false);
        let pid = 0;
        let stdout = '';
        let stderr = '';
        for await (const event of execEvents(res.body)) {
          if (event.type === 'start') pid = event.pid;
          else if (event.type === 'stdout') stdout = capped(stdout, event.data);
          else if (event.type === 'stderr') stderr = capped(stderr, event.data);
          else if (event.type === 'exit') {
            if (event.duration_ms > 1000)
              await ctx.sandboxes.activity(req.principal!.orgId, req.params.id);
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
        const channel = await ctx.sandboxes.use(req.principal!.orgId, req.params.id);
        const res = await startProcess(channel, { ...req.body, background: false }, false);
        return relay(reply, channel, res, true, () =>
          ctx.sandboxes.activity(req.principal!.orgId, req.params.id),
        );
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
      async (req, reply) => {
        const channel = await ctx.sandboxes.use(req.principal!.orgId, req.params.id);
        const res = await startProcess(channel, req.body, true);
        return reply.status(201).send(JSON.parse(await readText(res.body)));
      },
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
      async (req) => {
        const channel = await ctx.sandboxes.use(req.principal!.orgId, req.params.id);
        return channel.json({ path: GUEST_PATHS.processes });
      },
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
      async (req) => {
        const channel = await ctx.sandboxes.use(req.principal!.orgId, req.params.id);
        return channel.json({ path: `${GUEST_PATHS.processes}/${req.params.pid}` });
      },
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
        const channel = await ctx.sandboxes.use(req.principal!.orgId, req.params.id);
        const res = await channel
          .request({
            path: `${GUEST_PATHS.processes}/${req.params.pid}/events`,
            query: { follow: req.query.follow ? '1' : '0' },
          })
          .then(checked);
        return relay(reply, channel, res, false, () =>
          ctx.sandboxes.activity(req.principal!.orgId, req.params.id),
        );
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
        const channel = await ctx.sandboxes.use(req.principal!.orgId, req.params.id);
        await channel.json({
          method: 'POST',
          path: `${GUEST_PATHS.processes}/${req.params.pid}/stdin`,
          json: req.body,
        });
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
        const channel = await ctx.sandboxes.use(req.principal!.orgId, req.params.id);
        await channel.json({
          method: 'POST',
          path: `${GUEST_PATHS.processes}/${req.params.pid}/signal`,
          json: req.body,
        });
        return reply.status(204).send(null);
      },
    );
  };
