/**
 * The streaming calls of the host agent transport: event streams and build
 * progress as ndjson responses, file reads as a response body, file writes
 * and image uploads as a request body (args in a header). Bytes flow with
 * backpressure: nothing is buffered whole.
 */
import { PassThrough, Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BuildProgress, HostApi, TemplateImageQuery } from '@warren/protocol';
import { ARGS_HEADER, SIZE_HEADER, argsFrom, argsOf, errorOf } from './wire';

type Events = (args: unknown[], signal: AbortSignal) => Promise<AsyncIterable<unknown>>;

/** The event streams; their options (third argument) get an AbortSignal that fires when the client goes. */
function eventCalls(host: HostApi): Record<string, Events> {
  const withSignal = <T>(o: unknown, signal: AbortSignal) =>
    ({ ...((o as object | null) ?? {}), signal }) as T & { signal: AbortSignal };
  return {
    'processes/exec': ([id, start, o], signal) =>
      host.processes.exec(id as string, start as never, withSignal(o, signal)),
    'processes/output': ([id, pid, o], signal) =>
      host.processes.output(id as string, pid as number, withSignal(o, signal)),
    'code/run': ([id, req, o], signal) =>
      host.code.run(id as string, req as never, withSignal(o, signal)),
    'files/watch': ([id, path, o], signal) =>
      host.files.watch(id as string, path as string, withSignal(o, signal)),
  };
}

/** An AbortSignal that fires when the response is closed before it finished (the client went). */
function closedSignal(reply: FastifyReply): AbortController {
  const stop = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) stop.abort();
  });
  return stop;
}

async function* ndjson(events: AsyncIterable<unknown>, stop: AbortController) {
  try {
    for await (const event of events) yield `${JSON.stringify({ event })}\n`;
  } catch (err) {
    if (!stop.signal.aborted) yield `${JSON.stringify(errorOf(err).body)}\n`;
  } finally {
    // The consumer went before the end (the stream was destroyed): stop the call.
    stop.abort();
  }
}

type Progressed = (
  request: FastifyRequest,
  args: unknown[],
  progress: BuildProgress,
) => Promise<unknown>;

/** Calls with a progress callback: ndjson of `{progress, step}` lines, then `{result}` or `{error}`. */
function progressCalls(host: HostApi): Record<string, Progressed> {
  return {
    'templates/ensure': (_r, [names], progress) =>
      host.templates.ensure(names as string[], progress),
    'templates/build': (_r, [req], progress) => host.templates.build(req as never, progress),
    'templates/rebuild': (_r, [name], progress) => host.templates.rebuild(name as string, progress),
    'templates/buildFromImage': (request, [name, o], progress) =>
      host.templates.buildFromImage(
        name as string,
        request.body as Readable,
        (o ?? {}) as TemplateImageQuery,
        progress,
      ),
  };
}

/** Byte-stream bodies come with their arguments in a header; JSON bodies are the arguments. */
function callArgs(request: FastifyRequest): unknown[] {
  const header = request.headers[ARGS_HEADER];
  return header !== undefined ? argsFrom(header) : argsOf(request.body);
}

export function streamRoutes(app: FastifyInstance, host: HostApi, o: { bodyLimit: number }): void {
  for (const [path, call] of Object.entries(eventCalls(host))) {
    app.post(`/host/${path}`, { bodyLimit: o.bodyLimit }, async (request, reply) => {
      const stop = closedSignal(reply);
      // Start errors throw here and become an error response, before any event.
      const events = await call(argsOf(request.body), stop.signal);
      return reply
        .type('application/x-ndjson')
        .send(Readable.from(ndjson(events, stop), { objectMode: false }));
    });
  }

  for (const [path, call] of Object.entries(progressCalls(host))) {
    app.post(`/host/${path}`, { bodyLimit: o.bodyLimit }, async (request, reply) => {
      const out = new PassThrough();
      const line = (value: unknown) => {
        if (!out.writableEnded) out.write(`${JSON.stringify(value)}\n`);
      };
      call(request, callArgs(request), (text, step) => line({ progress: text, step })).then(
        (result) => {
          line({ done: true, result });
          out.end();
        },
        (err: unknown) => {
          line(errorOf(err).body);
          out.end();
        },
      );
      return reply.type('application/x-ndjson').send(out);
    });
  }

  app.post('/host/files/read', { bodyLimit: o.bodyLimit }, async (request, reply) => {
    const [id, path] = argsOf(request.body) as [string, string];
    const { size, stream } = await host.files.read(id, path);
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) stream.destroy();
    });
    return reply.header(SIZE_HEADER, String(size)).type('application/octet-stream').send(stream);
  });

  app.post('/host/files/write', async (request) => {
    const [id, path, mode] = callArgs(request) as [string, string, string | undefined];
    return { result: await host.files.write(id, path, request.body as Readable, mode) };
  });
}
