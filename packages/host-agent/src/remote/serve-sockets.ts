/**
 * The WebSocket calls of the host agent transport. Arguments are the `args`
 * query parameter (URI-encoded JSON array). The first text message says
 * whether the call started (`{"ok":true}`) or failed (an error body).
 *
 * - `GET /host/sandboxes/openPort`: then binary frames both ways are the
 *   connection's bytes; either side closing closes the connection.
 * - `GET /host/pty/attach`: then text frames `{"t":"start","offset"}`,
 *   `{"t":"exit","status"}`, `{"t":"end"}` and binary frames of output; the
 *   client's binary frames are input, its close detaches.
 */
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createWebSocketStream, type WebSocket } from 'ws';
import type { HostApi, OpenPortOptions, PtyAttachment } from '@warren/protocol';
import { argsFrom, errorOf } from './wire';

function queryArgs(request: FastifyRequest): unknown[] {
  return argsFrom((request.query as { args?: unknown } | undefined)?.args);
}

function fail(socket: WebSocket, err: unknown): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(errorOf(err).body));
  socket.close();
}

function splice(socket: WebSocket, conn: Duplex): void {
  const ws = createWebSocketStream(socket);
  const done = () => {
    conn.destroy();
    ws.destroy();
  };
  conn.on('error', done).on('close', done);
  ws.on('error', done).on('close', done);
  conn.pipe(ws);
  ws.pipe(conn);
}

function openPort(host: HostApi) {
  return (socket: WebSocket, request: FastifyRequest) => {
    socket.on('error', () => socket.terminate());
    let args: unknown[];
    try {
      args = queryArgs(request);
    } catch (err) {
      return fail(socket, err);
    }
    const [id, port, options] = args as [string, number, OpenPortOptions | undefined];
    host.sandboxes.openPort(id, port, options).then(
      (conn) => {
        if (socket.readyState !== socket.OPEN) return conn.destroy();
        socket.send(JSON.stringify({ ok: true }));
        splice(socket, conn);
      },
      (err: unknown) => fail(socket, err),
    );
  };
}

function attachPty(host: HostApi) {
  return (socket: WebSocket, request: FastifyRequest) => {
    socket.on('error', () => socket.terminate());
    let args: unknown[];
    try {
      args = queryArgs(request);
    } catch (err) {
      return fail(socket, err);
    }
    const [id, ptyId, o] = args as [string, string, { since?: number } | undefined];
    // What the session says before attach resolves waits until the client has heard "ok".
    let queue: Array<string | Buffer> | null = [];
    let ending = false;
    let attachment: PtyAttachment | null = null;
    let gone = false;
    const flush = (message: string | Buffer) => {
      if (socket.readyState === socket.OPEN) socket.send(message);
    };
    const send = (message: string | Buffer) => (queue ? queue.push(message) : flush(message));
    socket.on('close', () => {
      gone = true;
      attachment?.close();
    });
    socket.on('message', (data, isBinary) => {
      if (isBinary && attachment) attachment.write(Buffer.from(data as Buffer));
    });
    host.pty
      .attach(
        id,
        ptyId,
        {
          onStart: (offset) => send(JSON.stringify({ t: 'start', offset })),
          onData: (data) => send(data),
          onExit: (status) => send(JSON.stringify({ t: 'exit', status })),
          onEnd: () => {
            send(JSON.stringify({ t: 'end' }));
            ending = true;
            if (!queue) socket.close();
          },
        },
        o,
      )
      .then(
        (a) => {
          attachment = a;
          if (gone) return a.close();
          flush(JSON.stringify({ ok: true }));
          for (const message of queue ?? []) flush(message);
          queue = null;
          if (ending) socket.close();
        },
        (err: unknown) => fail(socket, err),
      );
  };
}

export function socketRoutes(app: FastifyInstance, host: HostApi): void {
  app.get('/host/sandboxes/openPort', { websocket: true }, openPort(host));
  app.get('/host/pty/attach', { websocket: true }, attachPty(host));
}
