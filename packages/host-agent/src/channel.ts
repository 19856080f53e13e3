/**
 * The host end of a sandbox's agent channel: a Unix socket the guest agent
 * dials, over which the host speaks HTTP/2 as the client. A new connection
 * (after a restore, or after this process restarts) replaces the old one.
 */
import {
  connect as h2connect,
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
} from 'node:http2';
import { createServer, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { WarrenError, isErrorCode, type ErrorBody, type FileInfo } from '@warren/protocol';
import {
  CHANNEL_SETTINGS,
  CHANNEL_WINDOW,
  DATA_TOKEN_BYTES,
  GUEST_DATA_SOCKET,
  GUEST_PATHS,
  type GuestHello,
} from '@warren/protocol/guest';

export interface GuestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: ClientHttp2Stream;
}

export interface GuestRequest {
  method?: string;
  path: string;
  query?: Record<string, string | undefined>;
  json?: unknown;
  body?: Readable;
}

export class GuestChannel {
  private server: Server | null = null;
  private dataServer: Server | null = null;
  /** Transfers waiting for the guest to dial their data connection, by token. */
  private readonly pendingData = new Map<string, (socket: Socket) => void>();
  private session: ClientHttp2Session | null = null;
  private readyWaiters: Array<() => void> = [];

  constructor(
    readonly socketPath: string,
    private readonly hello: () => GuestHello,
  ) {}

  get connected(): boolean {
    return this.session !== null && !this.session.closed && !this.session.destroyed;
  }

  get dataSocketPath(): string {
    return join(dirname(this.socketPath), GUEST_DATA_SOCKET);
  }

  /** Data connections that carry this token are the sandbox's egress (see network/). */
  private egress: { token: string; handle: (socket: Socket) => void } | null = null;

  acceptEgress(token: string, handle: (socket: Socket) => void): void {
    this.egress = { token, handle };
  }

  async listen(): Promise<void> {
    this.server = await listenOn(this.socketPath, (socket) => this.adopt(socket));
    this.dataServer = await listenOn(this.dataSocketPath, (socket) => this.adoptData(socket));
  }

  /** A data connection starts with its transfer's token and a newline. */
  private adoptData(socket: Socket): void {
    socket.on('error', () => undefined);
    const onReadable = () => {
      const head = socket.read(DATA_TOKEN_BYTES + 1) as Buffer | null;
      if (head === null) return;
      socket.off('readable', onReadable);
      const token = head.subarray(0, DATA_TOKEN_BYTES).toString('latin1');
      if (this.egress?.token === token) return this.egress.handle(socket);
      const take = this.pendingData.get(token);
      if (!take) return socket.destroy();
      take(socket);
    };
    socket.on('readable', onReadable);
  }

  private expectData(
    token: string,
    timeoutMs: number,
  ): { socket: Promise<Socket>; cancel: () => void } {
    let cancel = () => undefined as void;
    const socket = new Promise<Socket>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pendingData.delete(token);
        reject(
          new WarrenError('GUEST_UNAVAILABLE', 'sandbox agent did not open the data connection'),
        );
      }, timeoutMs);
      this.pendingData.set(token, (s) => {
        clearTimeout(timer);
        this.pendingData.delete(token);
        resolve(s);
      });
      cancel = () => {
        clearTimeout(timer);
        this.pendingData.delete(token);
      };
    });
    socket.catch(() => undefined);
    return { socket, cancel };
  }

  /** Streams `body` into a file in the sandbox over a data connection. */
  async upload(path: string, body: Readable, mode?: string): Promise<FileInfo> {
    const token = randomBytes(DATA_TOKEN_BYTES / 2).toString('hex');
    const data = this.expectData(token, DATA_DIAL_TIMEOUT_MS);
    try {
      await this.json({
        method: 'POST',
        path: GUEST_PATHS.filesReceive,
        json: { path, token, mode },
      });
    } catch (err) {
      data.cancel();
      throw err;
    }
    const socket = await data.socket;
    body.on('error', () => socket.destroy());
    body.pipe(socket);
    const reply = await readText(socket);
    const result = JSON.parse(reply || '{}') as FileInfo | ErrorBody;
    if ('error' in result) throw errorFrom(500, reply);
    if (!('path' in result))
      throw new WarrenError('GUEST_UNAVAILABLE', 'upload to the sandbox broke off');
    return result;
  }

  /** Opens a file in the sandbox for reading; the stream is a data connection. */
  async download(path: string): Promise<{ size: number; stream: Readable }> {
    const token = randomBytes(DATA_TOKEN_BYTES / 2).toString('hex');
    const data = this.expectData(token, DATA_DIAL_TIMEOUT_MS);
    let size: number;
    try {
      ({ size } = await this.json<{ size: number }>({
        method: 'POST',
        path: GUEST_PATHS.filesSend,
        json: { path, token },
      }));
    } catch (err) {
      data.cancel();
      throw err;
    }
    return { size, stream: await data.socket };
  }

  /** Preview connections to ports in the sandbox: no host socket may stay open for a checkpoint. */
  private readonly portSockets = new Set<Socket>();

  /**
   * A raw byte stream to a TCP port on the sandbox's loopback (preview URLs):
   * the guest connects to the port and pipes it over a data connection.
   * Fails with PORT_NOT_LISTENING when nothing accepts on that port.
   */
  async openPort(port: number): Promise<Socket> {
    const token = randomBytes(DATA_TOKEN_BYTES / 2).toString('hex');
    const data = this.expectData(token, DATA_DIAL_TIMEOUT_MS);
    try {
      await this.json({ method: 'POST', path: GUEST_PATHS.portConnect, json: { port, token } });
    } catch (err) {
      data.cancel();
      throw err;
    }
    const socket = await data.socket;
    this.portSockets.add(socket);
    socket.once('close', () => this.portSockets.delete(socket));
    return socket;
  }

  private dropPortConnections(): void {
    for (const s of this.portSockets) s.destroy();
    this.portSockets.clear();
  }

  private adopt(socket: Socket): void {
    const session = h2connect('http://guest', {
      createConnection: () => socket,
      settings: CHANNEL_SETTINGS,
    });
    session.on('error', () => undefined);
    session.once('connect', () => session.setLocalWindowSize(CHANNEL_WINDOW));
    session.on('close', () => {
      if (this.session === session) {
        this.session = null;
        this.ready = false;
      }
    });
    const previous = this.session;
    this.session = session;
    previous?.destroy();
    this.ready = false;
    this.sendHello(session).then(
      () => {
        if (this.session !== session) return;
        this.ready = true;
        const waiters = this.readyWaiters;
        this.readyWaiters = [];
        for (const w of waiters) w();
      },
      () => session.destroy(),
    );
  }

  private async sendHello(session: ClientHttp2Session): Promise<void> {
    const res = await this.requestOn(session, {
      method: 'POST',
      path: GUEST_PATHS.hello,
      json: this.hello(),
    });
    await drain(res.body);
    if (res.status !== 200) throw new WarrenError('GUEST_UNAVAILABLE', 'guest agent refused hello');
  }

  /** The current connection has accepted the hello: the guest knows who it is. */
  private ready = false;

  /** Resolves once a guest has connected and accepted the hello. */
  waitReady(timeoutMs: number): Promise<void> {
    if (this.connected && this.ready) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.readyWaiters = this.readyWaiters.filter((w) => w !== done);
        reject(
          new WarrenError(
            'GUEST_UNAVAILABLE',
            `guest agent did not connect within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.readyWaiters.push(done);
    });
  }

  /** Requests on the current connection that have not finished. */
  private inflight = 0;
  private onIdle: (() => void) | null = null;

  /**
   * Makes the guest drop its connection for a checkpoint: new requests wait
   * (they are served once the agent dials back in), requests in flight get up
   * to `drainMs` to finish, then the listener closes and the agent is told
   * to disconnect. Afterwards, `listen()` lets it dial back in.
   */
  async prepareCheckpoint(drainMs = 2_000): Promise<void> {
    const session = this.session;
    this.ready = false;
    this.dropPortConnections();
    if (this.inflight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs);
        this.onIdle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.onIdle = null;
    }
    this.dropPortConnections();
    try {
      await this.closeListener();
      if (!session || session.closed || session.destroyed) return;
      const res = await this.requestOn(session, {
        method: 'POST',
        path: GUEST_PATHS.prepareCheckpoint,
      });
      await readText(res.body);
      if (res.status !== 200)
        throw new WarrenError(
          'GUEST_UNAVAILABLE',
          'the sandbox agent refused to prepare a checkpoint',
        );
      await this.waitDisconnected(10_000);
    } catch (err) {
      // Not disconnected after all: the connection serves again.
      if (this.session === session && session && !session.closed && !session.destroyed)
        this.ready = true;
      throw err;
    }
  }

  /** Stops accepting connections and removes the socket file (before a checkpoint). */
  async closeListener(): Promise<void> {
    // close() stops accepting at once; its callback would wait for live connections too.
    this.server?.close();
    this.dataServer?.close();
    this.server = null;
    this.dataServer = null;
    await unlink(this.socketPath).catch(() => undefined);
    await unlink(this.dataSocketPath).catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.closeListener();
    this.dropPortConnections();
    this.session?.destroy();
    this.session = null;
    this.ready = false;
  }

  /** Waits until the current connection is gone (the guest dropped it). */
  async waitDisconnected(timeoutMs: number): Promise<void> {
    const session = this.session;
    if (!session) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new WarrenError('GUEST_UNAVAILABLE', 'guest agent did not disconnect')),
        timeoutMs,
      );
      session.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      if (session.closed || session.destroyed) {
        clearTimeout(timer);
        resolve();
      }
    });
    this.ready = false;
  }

  /**
   * Sends a request. While the agent is away for a moment (a capture for a
   * snapshot or fork, a restart of this process) the request waits for it to
   * dial back in rather than fail.
   */
  async request(req: GuestRequest): Promise<GuestResponse> {
    if (!this.connected || !this.ready) {
      await this.waitReady(RECONNECT_WAIT_MS).catch(() => {
        throw new WarrenError('GUEST_UNAVAILABLE', 'sandbox agent is not connected');
      });
    }
    return this.requestOn(this.session!, req);
  }

  private requestOn(session: ClientHttp2Session, req: GuestRequest): Promise<GuestResponse> {
    this.inflight += 1;
    let counted = true;
    const done = () => {
      if (!counted) return;
      counted = false;
      this.inflight -= 1;
      if (this.inflight === 0) this.onIdle?.();
    };
    return this.send(session, req, done);
  }

  private send(
    session: ClientHttp2Session,
    req: GuestRequest,
    done: () => void,
  ): Promise<GuestResponse> {
    const url = new URL(req.path, 'http://guest');
    for (const [k, v] of Object.entries(req.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, v);
    const headers: Record<string, string | number> = {
      [constants.HTTP2_HEADER_METHOD]: req.method ?? 'GET',
      [constants.HTTP2_HEADER_PATH]: url.pathname + url.search,
    };
    if (req.json !== undefined) headers['content-type'] = 'application/json';
    return new Promise<GuestResponse>((resolve, reject) => {
      let stream: ClientHttp2Stream;
      try {
        stream = session.request(headers, {
          endStream: req.json === undefined && req.body === undefined,
        });
      } catch (err) {
        done();
        reject(
          new WarrenError(
            'GUEST_UNAVAILABLE',
            `sandbox agent channel failed: ${(err as Error).message}`,
          ),
        );
        return;
      }
      // Counted until the stream is over: streamed answers (exec output) too.
      stream.once('close', done);
      const fail = (err: Error) =>
        reject(
          err instanceof WarrenError
            ? err
            : new WarrenError('GUEST_UNAVAILABLE', `sandbox agent channel failed: ${err.message}`),
        );
      stream.once('error', fail);
      // A stream can also just close, without error or response, when the
      // guest drops the connection (a checkpoint): that must not hang the caller.
      const closed = () => fail(new Error('the connection closed before the answer'));
      stream.once('close', closed);
      stream.once('response', (h) => {
        stream.off('error', fail);
        stream.off('close', closed);
        stream.on('error', () => undefined);
        resolve({ status: Number(h[':status']), headers: h, body: stream });
      });
      if (req.json !== undefined) stream.end(JSON.stringify(req.json));
      else if (req.body) {
        req.body.on('error', (err) => stream.destroy(err));
        req.body.pipe(stream);
      }
    });
  }

  /** A JSON request; guest error bodies become WarrenErrors with the guest's code. */
  async json<T>(req: GuestRequest): Promise<T> {
    const res = await this.request(req);
    const text = await readText(res.body);
    if (res.status >= 400) throw errorFrom(res.status, text);
    return (text ? JSON.parse(text) : {}) as T;
  }
}

const DATA_DIAL_TIMEOUT_MS = 15_000;
const RECONNECT_WAIT_MS = 10_000;

async function listenOn(path: string, onConnection: (socket: Socket) => void): Promise<Server> {
  await unlink(path).catch(() => undefined);
  const server = createServer(onConnection);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  return server;
}

export function errorFrom(status: number, text: string): WarrenError {
  try {
    const body = JSON.parse(text) as ErrorBody;
    if (isErrorCode(body.error?.code)) return new WarrenError(body.error.code, body.error.message);
  } catch {
    // not a JSON error body
  }
  return new WarrenError('INTERNAL', `guest agent answered ${status}`);
}

export async function readText(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function drain(stream: Readable): Promise<void> {
  for await (const _ of stream) void _;
}
