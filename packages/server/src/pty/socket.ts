/**
 * One viewer's WebSocket on a terminal session. Binary frames carry terminal
 * bytes both ways; a text frame {"type":"resize","cols":..,"rows":..} resizes;
 * the server sends {"type":"exit",...} when the process exits and closes
 * (1000), {"type":"error",...} for a bad frame, and closes with 1012 when the
 * sandbox pauses, hibernates or is captured (attach again: the session goes on).
 */
import type { WebSocket } from 'ws';
import {
  PTY_CLOSE,
  PTY_MAX_COLS,
  PTY_MAX_FRAME_BYTES,
  PTY_MAX_ROWS,
  WarrenError,
  type PtyAttachment,
  type PtyServerFrame,
} from '@warren/protocol';
import { toWarrenError } from '../errors';
import type { PtyService } from './service';

/** A viewer this far behind is dropped (it attaches again and gets the scrollback). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const PING_MS = 30_000;

function isSize(n: unknown, max: number): n is number {
  return Number.isInteger(n) && (n as number) >= 1 && (n as number) <= max;
}

export interface PtySocketTarget {
  orgId: string;
  id: string;
  ptyId: string;
  /** Replay from this output offset. */
  since?: number;
}

export function servePtySocket(socket: WebSocket, service: PtyService, t: PtySocketTarget): void {
  let attachment: PtyAttachment | null = null;
  const early: Buffer[] = [];
  let over = false;
  const send = (frame: PtyServerFrame) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
  };
  const close = (code: number, reason: string) => {
    over = true;
    if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING)
      socket.close(code, reason);
  };
  const sendError = (err: unknown) => {
    const e = toWarrenError(err as Error);
    send({ type: 'error', code: e.code, message: e.message });
  };

  const resize = (frame: { cols?: unknown; rows?: unknown }) => {
    if (!isSize(frame.cols, PTY_MAX_COLS) || !isSize(frame.rows, PTY_MAX_ROWS)) {
      const msg = `resize needs integer cols 1-${PTY_MAX_COLS} and rows 1-${PTY_MAX_ROWS}`;
      return sendError(new WarrenError('INVALID_REQUEST', msg));
    }
    service.resize(t.orgId, t.id, t.ptyId, { cols: frame.cols, rows: frame.rows }).catch(sendError);
  };

  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (over) return;
    if (data.length > PTY_MAX_FRAME_BYTES) {
      sendError(
        new WarrenError('PAYLOAD_TOO_LARGE', `frames are limited to ${PTY_MAX_FRAME_BYTES} bytes`),
      );
      return close(PTY_CLOSE.tooLarge, 'frame too large');
    }
    if (isBinary) {
      if (attachment) attachment.write(data);
      else early.push(data);
      return;
    }
    let frame: { type?: unknown; cols?: unknown; rows?: unknown };
    try {
      frame = JSON.parse(data.toString('utf8')) as typeof frame;
    } catch {
      return sendError(new WarrenError('INVALID_JSON', 'text frames must be JSON'));
    }
    if (frame?.type === 'resize') return resize(frame);
    sendError(
      new WarrenError('INVALID_REQUEST', 'text frames are {"type":"resize","cols":N,"rows":N}'),
    );
  });

  const ping = setInterval(() => socket.ping(), PING_MS);
  socket.once('close', () => {
    over = true;
    clearInterval(ping);
    attachment?.close();
    void service.activity(t.orgId, t.id).catch(() => undefined);
  });

  service
    .attach(
      t.orgId,
      t.id,
      t.ptyId,
      {
        onStart: (offset) => send({ type: 'attached', offset }),
        onData: (chunk) => {
          if (socket.readyState !== socket.OPEN) return;
          if (socket.bufferedAmount > MAX_BUFFERED_BYTES)
            return close(PTY_CLOSE.reconnect, 'viewer too slow: attach again');
          socket.send(chunk, { binary: true });
        },
        onExit: (status) => {
          send({ type: 'exit', exit_code: status.exit_code, signal: status.signal });
          close(PTY_CLOSE.exited, 'exited');
        },
        onEnd: () => close(PTY_CLOSE.reconnect, 'the sandbox is pausing: attach again'),
      },
      t.since,
    )
    .then(
      (a) => {
        if (over) return a.close();
        attachment = a;
        for (const b of early.splice(0)) a.write(b);
      },
      (err: unknown) => {
        sendError(err);
        const e = toWarrenError(err as Error);
        close(e.status === 404 ? PTY_CLOSE.gone : PTY_CLOSE.error, e.code);
      },
    );
}
