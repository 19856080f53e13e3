/**
 * One client connection at the front door, from the accepted socket to the
 * spliced backend stream: the startup handshake (GSSENC refused, TLS
 * required), routing, the wait for the database, then bytes both ways.
 * Every failure answers with an ErrorResponse where the client can read one,
 * and every path ends in teardown(), which destroys the sockets and streams
 * of the connection once.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket, type SecureContext } from 'node:tls';
import { WarrenError } from '@warren/protocol';
import { endpointName, routeStartup, type FrontDoorRoute } from './routing';
import { LINGER_MS, noPipelining, secured, splice } from './streams';
import {
  errorResponse,
  parseFirstPacket,
  readPacket,
  startupMessage,
  BackendKeyScanner,
  WireError,
  type FirstPacket,
} from './wire';

export interface Startup {
  user: string;
  database: string;
}

/** What a connection needs of the front door that owns it. */
export interface ConnectionHost {
  tls: SecureContext;
  sniDomain: string | undefined;
  startupTimeoutMs: number;
  log: FrontDoorLog;
  connect(route: FrontDoorRoute, startup: Startup): Promise<Duplex>;
  /** A CancelRequest: forward it if the key is known. */
  cancel(key: Buffer, packet: Buffer): Promise<void>;
  /** The backend announced this cancel key for the connection's route. */
  keySeen(conn: ClientConnection, key: Buffer): void;
  opened(conn: ClientConnection): void;
  closed(conn: ClientConnection): void;
}

export interface FrontDoorLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What a client may send while its database is opened, before it has been answered. */
const MAX_EARLY_BYTES = 64 * 1024;

export class ClientConnection {
  route: FrontDoorRoute | null = null;
  startup: Startup | null = null;
  /** Set once the backend stream is open and onOpen was called. */
  routed = false;
  readonly keys: string[] = [];
  private tls: TLSSocket | null = null;
  private secure = false;
  private spliced = false;
  private backend: Duplex | null = null;
  private finished = false;
  private failed = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly raw: Socket,
    private readonly host: ConnectionHost,
  ) {
    raw.on('error', (err) => this.host.log.info({ err }, 'front door: client socket error'));
    raw.once('close', () => this.clientClosed());
    raw.setNoDelay(true);
    raw.setKeepAlive(true, 60_000);
  }

  get ended(): boolean {
    return this.finished;
  }

  async run(): Promise<void> {
    this.timer = setTimeout(
      () =>
        this.fail(new WireError('08P01', 'timeout: no startup message within the time allowed')),
      this.host.startupTimeoutMs,
    );
    try {
      await this.handshake();
    } catch (err) {
      this.fail(err);
    }
  }

  /** Cuts the connection at once (the front door is closing). */
  destroy(): void {
    this.teardown();
  }

  private async handshake(): Promise<void> {
    let { packet, rest } = await readPacket(this.raw);
    let first = parseFirstPacket(packet);
    if (first.kind === 'gssenc') {
      noPipelining(rest);
      this.raw.write('N');
      ({ packet, rest } = await readPacket(this.raw));
      first = parseFirstPacket(packet);
    }
    if (first.kind === 'ssl') {
      noPipelining(rest);
      this.raw.write('S');
      const tls = new TLSSocket(this.raw, { isServer: true, secureContext: this.host.tls });
      this.tls = tls;
      tls.on('error', (err) => {
        this.host.log.info({ err }, 'front door: TLS error');
        this.teardown();
      });
      tls.once('close', () => this.clientClosed());
      await secured(tls);
      this.secure = true;
      ({ packet, rest } = await readPacket(tls));
      first = parseFirstPacket(packet);
      if (first.kind === 'ssl' || first.kind === 'gssenc')
        throw new WireError('08P01', 'unexpected encryption request inside TLS');
    }
    if (first.kind === 'gssenc') throw new WireError('08P01', 'unexpected encryption request');
    if (first.kind === 'cancel') {
      this.clearTimer();
      await this.host.cancel(first.key, first.packet);
      this.teardown();
      return;
    }
    if (!this.tls)
      throw new WireError(
        '28000',
        'Warren requires TLS: connect with sslmode=require',
        'Add sslmode=require (or sslmode=verify-full with sslrootcert=<the install CA>) to the connection string.',
      );
    this.clearTimer();
    await this.start(this.tls, first, rest);
  }

  private async start(
    client: TLSSocket,
    first: Extract<FirstPacket, { kind: 'startup' }>,
    rest: Buffer,
  ): Promise<void> {
    const routed = routeStartup(first.params, client.servername || null, this.host.sniDomain);
    this.route = routed.route;
    this.startup = { user: routed.user, database: routed.database };
    // Keep reading while the database is opened (it may be woken): a client
    // that gives up is seen at once, and anything it sends is kept.
    const early: Buffer[] = rest.length ? [rest] : [];
    let earlyBytes = rest.length;
    const hold = (d: Buffer): void => {
      early.push(d);
      earlyBytes += d.length;
      if (earlyBytes > MAX_EARLY_BYTES)
        this.fail(new WireError('08P01', 'unexpected data before authentication'));
    };
    client.on('data', hold);
    client.resume();
    let backend: Duplex;
    try {
      backend = await this.host.connect(routed.route, this.startup);
    } finally {
      client.off('data', hold);
      client.pause();
    }
    if (this.finished || this.failed) {
      backend.destroy();
      return;
    }
    this.backend = backend;
    backend.on('error', (err) => {
      this.host.log.info({ err, database: routed.route.databaseId }, 'front door: backend error');
      this.teardown();
    });
    // After a clean end, splice() finishes the other side before the teardown.
    backend.once('close', () => {
      if (!(this.spliced && backend.readableEnded)) this.teardown();
    });
    this.routed = true;
    this.host.opened(this);

    const scanner = new BackendKeyScanner((key) => this.host.keySeen(this, key));
    const scan = (chunk: Buffer): void => {
      scanner.feed(chunk);
      if (scanner.done) backend.off('data', scan);
    };
    backend.on('data', scan);
    backend.write(startupMessage(routed.params, first.version));
    for (const d of early) backend.write(d);
    this.spliced = true;
    splice(client, backend, () => this.teardown());
  }

  /** Answers a failure with an ErrorResponse where the client can read one, then closes. */
  private fail(err: unknown): void {
    if (this.finished || this.failed) return;
    this.failed = true;
    this.clearTimer();
    const answer = this.toErrorResponse(err);
    // Mid-handshake there is no way to say anything the client could read.
    const stream = this.tls ? (this.secure ? this.tls : null) : this.raw;
    if (!answer || !stream || this.backend || stream.destroyed) {
      this.teardown();
      return;
    }
    // Read and drop whatever else comes, so the close is a FIN and not a reset.
    stream.on('data', () => undefined);
    stream.resume();
    stream.end(answer);
    const linger = setTimeout(() => this.teardown(), LINGER_MS);
    linger.unref();
    stream.once('close', () => clearTimeout(linger));
  }

  private toErrorResponse(err: unknown): Buffer | null {
    if (err instanceof WireError) {
      if (err.code === '08006') return null; // the client went away: nobody to answer
      this.host.log.info({ code: err.code, msg: err.message }, 'front door: startup refused');
      return errorResponse({ code: err.code, message: err.message, hint: err.hint });
    }
    const code = (err as { code?: unknown } | null)?.code;
    const route = this.route;
    if (route && code === 'DATABASE_NOT_FOUND')
      return errorResponse({
        code: '3D000',
        message: `database "${route.databaseId}" does not exist`,
      });
    if (route && err instanceof WarrenError) {
      this.host.log.info({ code, database: route.databaseId }, 'front door: cannot connect now');
      return errorResponse({ code: '57P03', message: err.message });
    }
    this.host.log.error(
      { err, endpoint: route ? endpointName(route) : undefined },
      'front door: connection failed',
    );
    return errorResponse({
      code: route ? '57P03' : 'XX000',
      message: route ? `database "${route.databaseId}" is not available` : 'internal error',
    });
  }

  private clientClosed(): void {
    if (!(this.spliced && this.tls?.readableEnded)) this.teardown();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private teardown(): void {
    if (this.finished) return;
    this.finished = true;
    this.clearTimer();
    this.tls?.destroy();
    this.raw.destroy();
    this.backend?.destroy();
    this.host.closed(this);
  }
}
