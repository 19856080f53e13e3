/** Request routing for the guest agent's HTTP/2 API (see @warren/protocol/guest). */
import type { Http2Session, IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Readable } from 'node:stream';
import type { FileHandle } from 'node:fs/promises';
import { WarrenError } from '@warren/protocol/errors';
import {
  GUEST_PATHS,
  type DataTransfer,
  type ExecEvent,
  type GuestHello,
  type GuestProcessStart,
  type PortConnect,
  type GuestVolume,
} from '@warren/protocol/guest';
import type { CodeInterpreter } from './code';
import { routeCode } from './code-routes';
import { dialData } from './data';
import { configureEgress } from './egress';
import { readJson } from './body';
import * as files from './files';
import { assumeIdentity } from './identity';
import { connectPort } from './ports';
import { relay, type Relay } from './relay';
import type { ProcessTable } from './processes';
import type { PtyTable } from './pty';
import { routePty } from './pty-routes';
import { sendError, sendJson, toWarrenError } from './respond';
import { linkVolumes } from './volumes';
import { serveWatch, watchCount } from './watch';

export interface GuestState {
  sandboxId: string | null;
  env: Record<string, string>;
  /** The template's env and workdir: set by the hello of the bake, kept in the snapshot. */
  defaults?: { env: Record<string, string>; cwd?: string; user?: string };
  connections: number;
  readonly startedAt: number;
  readonly processes: ProcessTable;
  readonly pty: PtyTable;
  readonly code: CodeInterpreter;
  /**
   * The work of the last hello that may follow its answer (the sandbox's
   * identity and egress): every other request waits for it.
   */
  settling: Promise<void>;
  /** Drops the host connection (a dialed-in agent then dials again and gets a new hello). */
  prepareCheckpoint(): void;
}

const NDJSON = { ':status': 200, 'content-type': 'application/x-ndjson' } as const;

function streamEvents(
  stream: ServerHttp2Stream,
  subscribe: (l: (e: ExecEvent) => void) => () => void,
): void {
  stream.respond(NDJSON);
  const unsubscribe = subscribe((event) => {
    if (stream.destroyed) return;
    stream.write(JSON.stringify(event) + '\n');
    if (event.type === 'exit') stream.end();
  });
  stream.on('close', unsubscribe);
}

export async function route(
  state: GuestState,
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
): Promise<void> {
  const method = headers[':method'] ?? 'GET';
  const url = new URL(headers[':path'] ?? '/', 'http://guest');
  const path = url.pathname;
  const q = url.searchParams;
  // Health answers at once; everything else (a new hello too) after the last hello's work.
  if (path !== GUEST_PATHS.health) await state.settling;

  if (path === GUEST_PATHS.health) {
    return sendJson(stream, 200, {
      ok: true,
      sandbox_id: state.sandboxId,
      pid: process.pid,
      uptime_ms: Date.now() - state.startedAt,
      connections: state.connections,
      watches: watchCount(),
    });
  }
  if (path === GUEST_PATHS.hello && method === 'POST') {
    const hello = await readJson<GuestHello>(stream);
    const renamed = hello.sandbox_id !== state.sandboxId;
    state.sandboxId = hello.sandbox_id;
    state.env = hello.env ?? {};
    if (hello.defaults) state.defaults = hello.defaults;
    sendJson(stream, 200, { ok: true });
    // After the answer is on its way: a create is ready once the hello is answered, and
    // the first request that follows waits for this instead of the create.
    state.settling = new Promise((resolve) => setImmediate(resolve)).then(() =>
      settle(state, hello, renamed, stream.session),
    );
    return;
  }
  if (path === GUEST_PATHS.reset && method === 'POST') {
    state.pty.clear();
    state.code.reset();
    // The relay is the agent's own: file transfers, previews and egress go through it.
    const killed = await state.processes.reset([relay()?.pid]);
    await files.emptyDir('/dev/shm');
    return sendJson(stream, 200, { killed });
  }
  if (path === GUEST_PATHS.volumes && method === 'POST') {
    const body = await readJson<{ volumes: GuestVolume[] }>(stream);
    await linkVolumes(body.volumes);
    return sendJson(stream, 200, { ok: true });
  }
  if (path === GUEST_PATHS.prepareCheckpoint && method === 'POST') {
    await relay()?.drop();
    stream.respond({ ':status': 200, 'content-type': 'application/json' });
    stream.end('{"ok":true}', () => state.prepareCheckpoint());
    return;
  }

  if (path === GUEST_PATHS.processes) {
    if (method === 'GET') return sendJson(stream, 200, { items: state.processes.list() });
    if (method === 'POST') {
      const spec = await readJson<GuestProcessStart>(stream);
      spec.cwd ??= state.defaults?.cwd;
      spec.user ??= state.defaults?.user;
      const proc = await state.processes.start(spec);
      if (spec.background) {
        // Wait a tick so a spawn failure (command not found) is already recorded.
        await new Promise((r) => setImmediate(r));
        return sendJson(stream, 201, proc.info);
      }
      return streamEvents(stream, (l) => proc.subscribe(l));
    }
  }
  const procMatch = /^\/processes\/(\d+)(\/[a-z]+)?$/.exec(path);
  if (procMatch) {
    const proc = state.processes.get(Number(procMatch[1]));
    const sub = procMatch[2] ?? '';
    if (sub === '' && method === 'GET') return sendJson(stream, 200, proc.info);
    if (sub === '' && method === 'DELETE') {
      state.processes.remove(proc.info.pid);
      return sendJson(stream, 200, { ok: true });
    }
    if (sub === '/events' && method === 'GET') {
      if (q.get('follow') === '0') {
        stream.respond(NDJSON);
        proc.subscribe((e) => stream.write(JSON.stringify(e) + '\n'))();
        stream.end();
        return;
      }
      return streamEvents(stream, (l) => proc.subscribe(l));
    }
    if (sub === '/stdin' && method === 'POST') {
      const body = await readJson<{ data?: string; eof?: boolean }>(stream);
      proc.writeStdin(body.data ?? '', body.eof === true);
      return sendJson(stream, 200, { ok: true });
    }
    if (sub === '/signal' && method === 'POST') {
      const body = await readJson<{ signal?: NodeJS.Signals }>(stream);
      proc.killGroup(body.signal ?? 'SIGTERM');
      return sendJson(stream, 200, { ok: true });
    }
  }

  if (await routeCode(state.code, stream, method, path)) return;
  if (await routePty(state.pty, state.defaults, stream, method, path, q)) return;

  if (path === GUEST_PATHS.filesReceive && method === 'POST') {
    const req = await readJson<DataTransfer>(stream);
    const target = files.checkPath(req.path);
    await files.prepareWrite(target);
    // A path that cannot be written is refused here, before the host waits for data.
    const file = await files.openWrite(target);
    const fast = relay();
    if (fast) await file.close();
    sendJson(stream, 200, { ok: true });
    if (fast) relayReceive(fast, target, req);
    else receiveFile(target, file, req);
    return;
  }
  if (path === GUEST_PATHS.filesSend && method === 'POST') {
    const req = await readJson<DataTransfer>(stream);
    const source = files.checkPath(req.path);
    const fast = relay();
    if (fast) {
      const size = await files.readableSize(source);
      sendJson(stream, 200, { size });
      fast.send(req.token, source, size);
      return;
    }
    const opened = await files.openRead(source);
    sendJson(stream, 200, { size: opened.size });
    sendFile(opened.stream, req.token);
    return;
  }
  if (path === GUEST_PATHS.files) {
    const target = files.checkPath(q.get('path'));
    if (method === 'DELETE') {
      await files.remove(target, q.get('recursive') === '1');
      return sendJson(stream, 200, { ok: true });
    }
  }
  if (path === GUEST_PATHS.filesList && method === 'GET') {
    return sendJson(stream, 200, { items: await files.list(files.checkPath(q.get('path'))) });
  }
  if (path === GUEST_PATHS.filesStat && method === 'GET') {
    return sendJson(stream, 200, await files.info(files.checkPath(q.get('path'))));
  }
  if (path === GUEST_PATHS.filesWatch && method === 'GET') {
    return serveWatch(stream, files.checkPath(q.get('path')), q.get('recursive') === '1');
  }
  if (path === GUEST_PATHS.filesMkdir && method === 'POST') {
    const body = await readJson<{ path?: string; parents?: boolean }>(stream);
    return sendJson(
      stream,
      200,
      await files.makeDir(files.checkPath(body.path), body.parents !== false),
    );
  }
  if (path === GUEST_PATHS.filesRename && method === 'POST') {
    const body = await readJson<{ from?: string; to?: string }>(stream);
    return sendJson(
      stream,
      200,
      await files.move(files.checkPath(body.from), files.checkPath(body.to)),
    );
  }
  if (path === GUEST_PATHS.portConnect && method === 'POST') {
    await connectPort(await readJson<PortConnect>(stream));
    return sendJson(stream, 200, { ok: true });
  }
  throw new WarrenError('NOT_FOUND', `no guest route ${method} ${path}`);
}

/** Upload: bytes arrive on a data connection; the result goes back on it as one JSON line. */
function receiveFile(target: string, file: FileHandle, req: DataTransfer): void {
  const socket = dialData(req.token);
  files.writeFrom(target, file, socket, req.mode).then(
    (info) => socket.end(JSON.stringify(info) + '\n'),
    (err) => socket.end(JSON.stringify(toWarrenError(err).toBody()) + '\n'),
  );
}

/** Upload through the native relay: it writes the file, the agent answers with its info. */
function relayReceive(fast: Relay, target: string, req: DataTransfer): void {
  const mode = req.mode ? parseInt(req.mode, 8) : undefined;
  const answer = async (err: NodeJS.ErrnoException | null) => {
    const result = err ? toWarrenError(err).toBody() : await files.info(target).catch(toBody);
    return JSON.stringify(result) + '\n';
  };
  fast.receive(req.token, target, mode, answer).catch(() => undefined);
}

const toBody = (err: unknown) => toWarrenError(err).toBody();

/** Download: the file goes out on a data connection; a short stream tells the host it broke. */
function sendFile(source: Readable, token: string): void {
  const socket = dialData(token);
  source.pipe(socket);
  source.on('error', () => socket.destroy());
  socket.on('error', () => source.destroy());
}

/**
 * A new sandbox id means a new machine (host name, machine id); the egress
 * token and CA come with every hello. When that fails the connection is
 * dropped: the agent dials again and the host sends the hello again.
 */
async function settle(
  state: GuestState,
  hello: GuestHello,
  renamed: boolean,
  session: Http2Session | undefined,
): Promise<void> {
  if (renamed) {
    try {
      assumeIdentity(hello.sandbox_id, state.processes.helper);
    } catch (err) {
      process.stderr.write(`warren: could not set the sandbox's identity: ${String(err)}\n`);
    }
  }
  try {
    await configureEgress(hello.egress);
  } catch (err) {
    process.stderr.write(`warren: could not configure egress: ${String(err)}\n`);
    session?.destroy();
  }
}

export function handle(
  state: GuestState,
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
): void {
  stream.on('error', () => {});
  route(state, stream, headers).catch((err) => sendError(stream, err));
}
