/**
 * Terminal sessions of a sandbox: `create`, `list`, `get`, `resize`, `kill`,
 * and `connect`, a WebSocket viewer (the `ws` package: Node's own WebSocket
 * cannot send an Authorization header). Sessions outlive their viewers; a
 * viewer whose connection closes with 1012 (the sandbox paused, hibernated or
 * was captured) simply connects again and gets the scrollback.
 */
import { WebSocket } from 'ws';
import {
  PTY_CLOSE,
  type PtyCreateRequest,
  type PtyInfo,
  type PtyServerFrame,
  type PtyToken,
} from '@warren/protocol';
import type { HttpClient } from './client';
import { errorFromResponse, WarrenConnectionError } from './errors';

export interface PtyCreateOptions {
  cols: number;
  rows: number;
  /** Default: the user's login shell, else bash, else sh. */
  cmd?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  user?: string;
  /** Seconds without a viewer before the session is killed (server default: one hour). */
  idleTimeout?: number;
}

export interface PtyConnectOptions {
  /**
   * Replay the scrollback from this output offset: a reconnecting viewer
   * passes the `offset` its previous connection reached, and gets only what
   * it has not seen. Default: all the scrollback.
   */
  since?: number;
  /** Terminal output: the scrollback first, then live bytes. */
  onData?: (data: Buffer) => void;
  /** The process exited with this code (the connection closes right after). */
  onExit?: (exit: { exitCode: number; signal: string | null }) => void;
  /** A frame the server refused. */
  onError?: (error: { code: string; message: string }) => void;
}

export interface PtyClose {
  code: number;
  reason: string;
  /** The session goes on (a pause or checkpoint ended this connection): connect again. */
  reconnect: boolean;
}

/** One viewer of a session. */
export class PtyConnection {
  /** Resolves when the connection closes, however that happens. */
  readonly closed: Promise<PtyClose>;
  /** The output offset reached: pass it as `since` when connecting again. */
  offset = 0;

  constructor(readonly socket: WebSocket) {
    this.closed = new Promise((resolve) =>
      socket.once('close', (code, reason) =>
        resolve({ code, reason: reason.toString(), reconnect: code === PTY_CLOSE.reconnect }),
      ),
    );
  }

  /** Sends keystrokes (or any bytes) to the terminal. */
  write(data: string | Uint8Array): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.send(typeof data === 'string' ? Buffer.from(data, 'utf8') : data, { binary: true });
  }

  resize(cols: number, rows: number): void {
    if (this.socket.readyState === WebSocket.OPEN)
      this.socket.send(JSON.stringify({ type: 'resize', cols, rows }));
  }

  /** Detaches; the session goes on. */
  close(): Promise<PtyClose> {
    if (this.socket.readyState !== WebSocket.CLOSED) this.socket.close(1000);
    return this.closed;
  }
}

export class Pty {
  readonly #http: HttpClient;
  readonly #base: string;

  constructor(http: HttpClient, sandboxId: string) {
    this.#http = http;
    this.#base = `/v1/sandboxes/${encodeURIComponent(sandboxId)}/pty`;
  }

  create(o: PtyCreateOptions): Promise<PtyInfo> {
    const req: PtyCreateRequest = {
      cols: o.cols,
      rows: o.rows,
      cmd: o.cmd,
      args: o.args,
      env: o.env,
      cwd: o.cwd,
      user: o.user,
      idle_timeout: o.idleTimeout,
    };
    return this.#http.json('POST', this.#base, { json: req });
  }

  async list(): Promise<PtyInfo[]> {
    return (await this.#http.json<{ items: PtyInfo[] }>('GET', this.#base)).items;
  }

  get(ptyId: string): Promise<PtyInfo> {
    return this.#http.json('GET', `${this.#base}/${encodeURIComponent(ptyId)}`);
  }

  resize(ptyId: string, size: { cols: number; rows: number }): Promise<PtyInfo> {
    return this.#http.json('POST', `${this.#base}/${encodeURIComponent(ptyId)}/resize`, {
      json: size,
    });
  }

  /** Kills the session's processes and forgets it. */
  async kill(ptyId: string): Promise<void> {
    await this.#http.request('DELETE', `${this.#base}/${encodeURIComponent(ptyId)}`);
  }

  /** A single-use token for `?token=` (a browser's WebSocket), valid up to 60 s. */
  token(ptyId: string, o: { ttlSeconds?: number } = {}): Promise<PtyToken> {
    return this.#http.json('POST', `${this.#base}/${encodeURIComponent(ptyId)}/token`, {
      json: o.ttlSeconds ? { ttl_seconds: o.ttlSeconds } : {},
    });
  }

  /** Attaches a viewer; resolves once the WebSocket is open, rejects with the API's error. */
  connect(ptyId: string, o: PtyConnectOptions = {}): Promise<PtyConnection> {
    const query = o.since !== undefined ? { since: o.since } : {};
    const url = this.#http
      .url(`${this.#base}/${encodeURIComponent(ptyId)}`, query)
      .replace(/^http/, 'ws');
    const socket = new WebSocket(url, { headers: this.#http.authHeaders() });
    const conn = new PtyConnection(socket);
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        conn.offset += data.length;
        return o.onData?.(data);
      }
      const frame = JSON.parse(data.toString('utf8')) as PtyServerFrame;
      if (frame.type === 'attached') conn.offset = frame.offset;
      else if (frame.type === 'exit')
        o.onExit?.({ exitCode: frame.exit_code, signal: frame.signal });
      else if (frame.type === 'error') o.onError?.({ code: frame.code, message: frame.message });
    });
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(conn));
      // `on`, not `once`: an error after the open (a reset connection) must not go
      // unhandled; it is always followed by 'close', which `closed` reports.
      socket.on('error', (err) =>
        reject(
          new WarrenConnectionError(`terminal WebSocket failed: ${err.message}`, { cause: err }),
        ),
      );
      socket.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => {
          reject(errorFromResponse(res.statusCode ?? 500, body));
          socket.terminate();
        });
      });
    });
  }
}
