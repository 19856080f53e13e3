/** The guest's terminal routes: create, list, get, resize, kill, and attach (one HTTP/2 stream). */
import type { ServerHttp2Stream } from 'node:http2';
import { WarrenError } from '@warren/protocol/errors';
import {
  GUEST_PATHS,
  PTY_FRAME_EXIT,
  PTY_FRAME_HEADER,
  PTY_FRAME_OUTPUT,
  PTY_FRAME_START,
  type GuestPtyStart,
} from '@warren/protocol/guest';
import { readJson } from './body';
import type { PtySession, PtyTable } from './pty';
import { sendJson } from './respond';

export interface PtyDefaults {
  cwd?: string;
  user?: string;
}

function frame(type: number, payload: Buffer): Buffer {
  const head = Buffer.allocUnsafe(PTY_FRAME_HEADER);
  head.writeUInt8(type, 0);
  head.writeUInt32LE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** Output frames to the host until the exit frame; the request body is the viewer's input. */
function attach(stream: ServerHttp2Stream, session: PtySession, since: number | undefined): void {
  stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
  const detach = session.attach(
    {
      start: (offset) =>
        stream.write(frame(PTY_FRAME_START, Buffer.from(JSON.stringify({ offset })))),
      data: (chunk) => {
        if (!stream.destroyed) stream.write(frame(PTY_FRAME_OUTPUT, chunk));
      },
      exit: (status) => {
        if (!stream.destroyed)
          stream.end(frame(PTY_FRAME_EXIT, Buffer.from(JSON.stringify(status))));
      },
    },
    since,
  );
  stream.on('data', (chunk: Buffer) => session.write(chunk));
  stream.on('close', detach);
}

/** Serves a /pty path; false when the path is not one of them. */
export async function routePty(
  table: PtyTable,
  defaults: PtyDefaults | undefined,
  stream: ServerHttp2Stream,
  method: string,
  path: string,
  query: URLSearchParams,
): Promise<boolean> {
  if (path === GUEST_PATHS.pty) {
    if (method === 'GET') {
      sendJson(stream, 200, { items: table.list() });
      return true;
    }
    if (method === 'POST') {
      const spec = await readJson<GuestPtyStart>(stream);
      spec.cwd ??= defaults?.cwd;
      spec.user ??= defaults?.user;
      sendJson(stream, 201, (await table.create(spec)).info);
      return true;
    }
  }
  const m = /^\/pty\/([a-z0-9_]+)(\/[a-z]+)?$/.exec(path);
  if (!m?.[1]) return false;
  const session = table.get(m[1]);
  const sub = m[2] ?? '';
  if (sub === '' && method === 'GET') sendJson(stream, 200, session.info);
  else if (sub === '' && method === 'DELETE') {
    table.remove(session.info.pty_id);
    sendJson(stream, 200, { ok: true });
  } else if (sub === '/resize' && method === 'POST') {
    const body = await readJson<{ cols?: number; rows?: number }>(stream);
    const ok = (n: unknown) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 65535;
    if (!ok(body.cols) || !ok(body.rows))
      throw new WarrenError('INVALID_REQUEST', 'cols and rows must be integers from 1 to 65535');
    session.resize(body.cols!, body.rows!);
    sendJson(stream, 200, session.info);
  } else if (sub === '/attach' && method === 'POST') {
    const since = Number(query.get('since') ?? NaN);
    attach(stream, session, Number.isSafeInteger(since) && since >= 0 ? since : undefined);
  } else return false;
  return true;
}
