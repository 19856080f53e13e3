/**
 * Language servers of a sandbox: `connect`, a vscode-jsonrpc MessageConnection
 * over the LSP WebSocket (one JSON-RPC message per text frame, on a server of
 * its own that stops when the connection closes), and the compact calls
 * (`definition`, `references`, `hover`, `diagnostics`, `symbols`) that answer
 * short `path:line:col` text from a warm server.
 */
import { WebSocket } from 'ws';
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  createMessageConnection,
  type DataCallback,
  type Disposable,
  type Message,
  type MessageConnection,
  type MessageReader,
  type MessageWriter,
} from 'vscode-jsonrpc';
import type {
  LspAction,
  LspActionRequest,
  LspActionResult,
  LspLanguage,
  LspToken,
} from '@warren/protocol';
import type { HttpClient } from './client';
import { errorFromResponse, WarrenConnectionError } from './errors';

export interface LspConnectOptions {
  language: LspLanguage;
  /** The project's directory in the sandbox (default /root). */
  root?: string;
}

/** `{language, path, line, col}`: path absolute or relative to root, line and col 1-based. */
export type LspCallOptions = LspActionRequest;

class SocketReader extends AbstractMessageReader implements MessageReader {
  constructor(private readonly socket: WebSocket) {
    super();
    socket.on('error', (err) => this.fireError(err));
    socket.once('close', () => this.fireClose());
  }

  listen(callback: DataCallback): Disposable {
    const onMessage = (data: Buffer) => {
      try {
        callback(JSON.parse(data.toString('utf8')) as Message);
      } catch (err) {
        this.fireError(err);
      }
    };
    this.socket.on('message', onMessage);
    return { dispose: () => this.socket.off('message', onMessage) };
  }
}

class SocketWriter extends AbstractMessageWriter implements MessageWriter {
  constructor(private readonly socket: WebSocket) {
    super();
    socket.once('close', () => this.fireClose());
  }

  write(msg: Message): Promise<void> {
    return new Promise((resolve, reject) =>
      this.socket.send(JSON.stringify(msg), (err) => (err ? reject(err) : resolve())),
    );
  }

  end(): void {}
}

/** An LSP connection: vscode-jsonrpc's MessageConnection; `dispose()` also closes the socket. */
export type LspConnection = MessageConnection & { readonly socket: WebSocket };

export class Lsp {
  readonly #http: HttpClient;
  readonly #base: string;

  constructor(http: HttpClient, sandboxId: string) {
    this.#http = http;
    this.#base = `/v1/sandboxes/${encodeURIComponent(sandboxId)}/lsp`;
  }

  /**
   * Starts a language server in the sandbox and connects to it; resolves once
   * the connection listens (send `initialize` first, as LSP says), rejects
   * with the API's error (LANGUAGE_SERVER_NOT_INSTALLED, FILE_NOT_FOUND, ...).
   */
  connect(o: LspConnectOptions): Promise<LspConnection> {
    const query: Record<string, string> = { language: o.language };
    if (o.root) query.root = o.root;
    const url = this.#http.url(this.#base, query).replace(/^http/, 'ws');
    const socket = new WebSocket(url, { headers: this.#http.authHeaders() });
    return new Promise((resolve, reject) => {
      socket.once('open', () => {
        const conn = createMessageConnection(new SocketReader(socket), new SocketWriter(socket));
        const dispose = conn.dispose.bind(conn);
        conn.dispose = () => {
          dispose();
          if (socket.readyState !== WebSocket.CLOSED) socket.close(1000);
        };
        conn.listen();
        resolve(Object.assign(conn, { socket }));
      });
      socket.on('error', (err) =>
        reject(new WarrenConnectionError(`LSP WebSocket failed: ${err.message}`, { cause: err })),
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

  /** A single-use token for `?token=` (a browser's WebSocket), valid up to 60 s. */
  token(o: { ttlSeconds?: number } = {}): Promise<LspToken> {
    return this.#http.json('POST', `${this.#base}/token`, {
      json: o.ttlSeconds ? { ttl_seconds: o.ttlSeconds } : {},
    });
  }

  /** One compact call, answered as text. */
  call(action: LspAction, o: LspCallOptions): Promise<LspActionResult> {
    return this.#http.json('POST', `${this.#base}/${action}`, { json: o });
  }

  /** Where the symbol at line:col is defined: `path:line:col` lines. */
  definition(o: LspCallOptions): Promise<LspActionResult> {
    return this.call('definition', o);
  }

  /** Every use of the symbol at line:col, its definition included. */
  references(o: LspCallOptions): Promise<LspActionResult> {
    return this.call('references', o);
  }

  /** The type and documentation of what is at line:col, as plain text. */
  hover(o: LspCallOptions): Promise<LspActionResult> {
    return this.call('hover', o);
  }

  /** The file's errors and warnings: `path:line:col: severity: message` lines. */
  diagnostics(o: Omit<LspCallOptions, 'line' | 'col'>): Promise<LspActionResult> {
    return this.call('diagnostics', o);
  }

  /** The file's classes, functions and variables: `path:line:col kind name` lines. */
  symbols(o: Omit<LspCallOptions, 'line' | 'col'>): Promise<LspActionResult> {
    return this.call('symbols', o);
  }
}
