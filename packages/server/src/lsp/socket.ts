/**
 * One client's WebSocket on a language server of its own: each text frame is
 * one JSON-RPC message, written to the server with its `Content-Length`
 * header; each message the server writes goes back as one text frame. The
 * server was started before the upgrade and is killed when the socket closes.
 */
import type { WebSocket } from 'ws';
import { LSP_CLOSE, LSP_MAX_FRAME_BYTES } from '@warren/protocol';
import type { Message } from 'vscode-jsonrpc';
import type { LanguageServerProcess } from './server-process';

const PING_MS = 30_000;

/** A JSON-RPC error response with no id, as the specification answers what it cannot parse. */
function parseError(message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message } });
}

function isMessage(v: unknown): v is Message {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function serveLspSocket(
  socket: WebSocket,
  server: LanguageServerProcess,
  onClose: () => void,
): void {
  let over = false;
  const close = (code: number, reason: string) => {
    over = true;
    if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING)
      socket.close(code, reason.slice(0, 120));
  };

  socket.on('message', (data: Buffer) => {
    if (over) return;
    if (data.length > LSP_MAX_FRAME_BYTES)
      return close(LSP_CLOSE.tooLarge, `frames are limited to ${LSP_MAX_FRAME_BYTES} bytes`);
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      return socket.send(parseError('a frame must be one JSON-RPC message (JSON)'));
    }
    if (!isMessage(msg)) return socket.send(parseError('a frame must be one JSON-RPC object'));
    server.writer
      .write(msg)
      .catch(() => close(LSP_CLOSE.error, 'the language server stream broke'));
  });

  server.reader.listen((msg) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(msg));
  });

  const ping = setInterval(() => socket.ping(), PING_MS);
  socket.once('close', () => {
    over = true;
    clearInterval(ping);
    void server.stop().finally(onClose);
  });

  void server.ended.then((end) => {
    if (end === null) return close(LSP_CLOSE.reconnect, 'the sandbox is pausing: connect again');
    if (end.exit_code === 0) return close(LSP_CLOSE.exited, 'the language server exited');
    const tail = server.stderrTail;
    close(
      LSP_CLOSE.error,
      `the language server exited (${end.exit_code})${tail ? `: ${tail}` : ''}`,
    );
  });
}
