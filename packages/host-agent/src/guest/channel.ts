/**
 * The host end of a sandbox's agent channel. The guest agent dials the
 * sandbox's guest endpoint (owned by the runtime driver); over that control
 * connection the host speaks HTTP/2 as the client. A new connection (after a
 * restore, or after this process restarts) replaces the old one.
 */
import {
  connect as h2connect,
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
} from 'node:http2';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { WarrenError, type ErrorBody, type FileInfo, type OpenPortOptions } from '@warren/protocol';
import {
  CHANNEL_SETTINGS,
  CHANNEL_WINDOW,
  GUEST_PATHS,
  type GuestHello,
  type PortConnect,
} from '@warren/protocol/guest';
import type { GuestEndpoint } from '../runtime/driver';
import { DataConnections, newDataToken } from './data-connections';
import { drain, errorFrom, readText } from './wire';

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

const channelClosed = () => new WarrenError('GUEST_UNAVAILABLE', 'the channel is closed');

export class GuestChannel {
  private session: ClientHttp2Session | null = null;
  private readyWaiters: Array<(err?: Error) => void> = [];
  /** Set by close(), for good: nothing waits for a guest that can no longer dial in. */
  private closed = false;
  readonly data = new DataConnections();

  constructor(
    private readonly endpoint: GuestEndpoint,
    private readonly hello: () => GuestHello,
  ) {}

  /** When the current connection was made (performance.now()), or null before the first. */
  connectedAt: number | null = null;

  get connected(): boolean {
    return this.session !== null && !this.session.closed && !this.session.destroyed;
  }

  /** Open terminal attachments: ended before a pause or a checkpoint (the viewers attach again). */
  private readonly attachments = new Set<() => void>();

  /** Registers a long-lived attachment's end; returns the function that unregisters it. */
  holdAttachment(end: () => void): () => void {
    this.attachments.add(end);
    return () => this.attachments.delete(end);
  }

  /** Ends every terminal attachment: the sessions stay in the guest. */
  dropAttachments(): void {
    for (const end of [...this.attachments]) end();
    this.attachments.clear();
  }

  /** Data connections that carry this token are the sandbox's egress (see network/). */
  acceptEgress(token: string, handle: (socket: Socket) => void): void {
    this.data.acceptEgress(token, handle);
  }

  async listen(): Promise<void> {
    if (this.closed) throw channelClosed();
    await this.endpoint.listen({
      control: (socket) => this.adopt(socket),
      data: (socket) => this.data.adopt(socket),
    });
  }

  /** Streams `body` into a file in the sandbox over a data connection. */
  async upload(path: string, body: Readable, mode?: string): Promise<FileInfo> {
    const token = newDataToken();
    const data = this.data.expect(token);
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
    const token = newDataToken();
    const data = this.data.expect(token);
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

  /**
   * A raw byte stream to a TCP port on the sandbox's loopback (preview URLs),
   * or to a Unix socket in it (`options.unix`): the guest connects and pipes
   * it over a data connection. Fails with PORT_NOT_LISTENING when nothing
   * accepts there.
   */
  async openPort(port: number, options: OpenPortOptions = {}): Promise<Socket> {
    const token = newDataToken();
    const data = this.data.expect(token);
    const request: PortConnect = { port, token, handoff: options.handoff, unix: options.unix };
    try {
      await this.json({ method: 'POST', path: GUEST_PATHS.portConnect, json: request });
    } catch (err) {
      data.cancel();
      throw err;
    }
    const socket = await data.socket;
    this.data.trackPort(socket, options.handoff !== undefined);
    return socket;
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
    this.connectedAt = performance.now();
    previous?.destroy();
    this.ready = false;
    this.sendHello(session).then(
      () => {
        if (this.session !== session) return;
        this.ready = true;
        for (const w of this.readyWaiters.splice(0)) w();
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
    if (this.closed) return Promise.reject(channelClosed());
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
      const done = (err?: Error) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      this.readyWaiters.push(done);
    });
  }

  /** Requests on the current connection that have not finished. */
  private inflight = 0;
  /** A request still open (a streamed exec among them), a port connection or a terminal attached. */
  get busy(): boolean {
    return this.inflight > 0 || this.data.openPorts > 0 || this.attachments.size > 0;
  }
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
    const dropped = this.data.dropPorts(true);
    this.dropAttachments();
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
    await dropped;
    await this.data.dropPorts(true);
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

  /** Stops accepting connections: the guest cannot dial back in (before a checkpoint). */
  async closeListener(): Promise<void> {
    await this.endpoint.close();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.readyWaiters.splice(0)) w(channelClosed());
    await this.closeListener();
    void this.data.dropPorts();
    this.dropAttachments();
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

const RECONNECT_WAIT_MS = 10_000;
