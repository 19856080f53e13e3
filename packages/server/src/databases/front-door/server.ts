/**
 * The database front door: one TCP port that speaks the PostgreSQL wire
 * protocol for every database of the install. It terminates TLS with the
 * install's database certificate (tls.ts), finds the database a connection is
 * for (routing.ts), opens a byte stream to that database's Postgres or
 * PgBouncer through `connect` (which may wake it), sends the startup on with
 * the endpoint taken out, and then splices the two streams. Authentication
 * (SCRAM-SHA-256) is Postgres's own and passes through untouched.
 *
 * CancelRequests (which libpq sends on a new, often unencrypted, connection)
 * are forwarded to the database whose backend announced the key, as seen in
 * its BackendKeyData; unknown keys are dropped silently, as Postgres does.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SecureContext } from 'node:tls';
import { ClientConnection, type FrontDoorLog, type Startup } from './connection';
import type { FrontDoorRoute } from './routing';

export type { FrontDoorRoute } from './routing';
export type { FrontDoorLog } from './connection';

export interface FrontDoorOptions {
  tls: SecureContext;
  /**
   * Opens the byte stream to the database's Postgres (pooled: PgBouncer).
   * Throws a WarrenError: DATABASE_NOT_FOUND is answered with SQLSTATE 3D000,
   * any other code with 57P03 (cannot_connect_now) and the error's message.
   * It may take a while (waking a hibernated database); the client waits.
   */
  connect(route: FrontDoorRoute, startup: Startup): Promise<Duplex>;
  /** Activity accounting: a client connection was spliced to the database (after connect). */
  onOpen?(databaseId: string): void;
  /** ...and it closed. Called exactly once for each onOpen. */
  onClose?(databaseId: string): void;
  /** Domain for SNI routing: `<endpoint>.<sniDomain>`. Without it any domain is accepted. */
  sniDomain?: string;
  /** Time allowed from accept to the StartupMessage (TLS handshake included). Default 10 s. */
  startupTimeoutMs?: number;
  /** Where connection failures are logged (a pino/Fastify logger fits). */
  log?: FrontDoorLog;
}

/** How long a forwarded CancelRequest may take to be delivered. */
const CANCEL_TIMEOUT_MS = 5000;

export class FrontDoor {
  private readonly server: Server;
  private readonly conns = new Set<ClientConnection>();
  private readonly open = new Map<string, number>();
  /** Cancel keys (hex of pid and secret) announced by backends, and where they came from. */
  private readonly cancelKeys = new Map<string, { route: FrontDoorRoute; startup: Startup }>();
  private readonly log: FrontDoorLog;
  private closing = false;

  constructor(private readonly o: FrontDoorOptions) {
    this.log = o.log ?? { info: () => undefined, error: () => undefined };
    this.server = createServer((socket) => this.accept(socket));
  }

  /** Listens on `host:port` (port 0: any free port) and returns the bound port. */
  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        this.server.on('error', (err) => this.log.error({ err }, 'front door: listener error'));
        const address = this.server.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  }

  /** Stops listening and cuts every client connection, routed or not. */
  async close(): Promise<void> {
    this.closing = true;
    const stopped = new Promise<void>((resolve) => {
      if (!this.server.listening) resolve();
      else this.server.close(() => resolve());
    });
    for (const c of [...this.conns]) c.destroy();
    await stopped;
  }

  /** Every open client connection: spliced to a database, waiting for one, or in its startup. */
  clients(): number {
    return this.conns.size;
  }

  /** The databases with a client connection spliced to them now. */
  databases(): string[] {
    return [...this.open.keys()];
  }

  /** Open client connections spliced to a database (to this one, if given). */
  connections(databaseId?: string): number {
    if (databaseId !== undefined) return this.open.get(databaseId) ?? 0;
    let n = 0;
    for (const v of this.open.values()) n += v;
    return n;
  }

  private accept(socket: Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    const conn = new ClientConnection(socket, {
      tls: this.o.tls,
      sniDomain: this.o.sniDomain,
      startupTimeoutMs: this.o.startupTimeoutMs ?? 10_000,
      log: this.log,
      connect: (route, startup) => this.o.connect(route, startup),
      cancel: (key, packet) => this.cancel(key, packet),
      keySeen: (c, key) => {
        if (!c.route || !c.startup || c.ended) return;
        const hex = key.toString('hex');
        c.keys.push(hex);
        this.cancelKeys.set(hex, { route: c.route, startup: c.startup });
      },
      opened: (c) => {
        const id = c.route!.databaseId;
        this.open.set(id, (this.open.get(id) ?? 0) + 1);
        this.notify(this.o.onOpen, id);
      },
      closed: (c) => this.closed(c),
    });
    this.conns.add(conn);
    void conn.run();
  }

  private closed(c: ClientConnection): void {
    this.conns.delete(c);
    for (const k of c.keys) this.cancelKeys.delete(k);
    if (!c.routed || !c.route) return;
    const id = c.route.databaseId;
    const n = (this.open.get(id) ?? 1) - 1;
    if (n > 0) this.open.set(id, n);
    else this.open.delete(id);
    this.notify(this.o.onClose, id);
  }

  private notify(fn: ((id: string) => void) | undefined, id: string): void {
    try {
      fn?.call(this.o, id);
    } catch (err) {
      this.log.error({ err, database: id }, 'front door: activity callback failed');
    }
  }

  /** Sends a CancelRequest on to the database that issued the key; unknown keys are dropped. */
  private async cancel(key: Buffer, packet: Buffer): Promise<void> {
    const target = this.cancelKeys.get(key.toString('hex'));
    if (!target) return;
    let stream: Duplex | null = null;
    try {
      stream = await this.o.connect(target.route, target.startup);
      const s = stream;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, CANCEL_TIMEOUT_MS);
        const done = (): void => {
          clearTimeout(t);
          resolve();
        };
        s.once('error', done);
        s.once('close', done);
        // Postgres reads the request and closes; it sends nothing back.
        s.on('data', () => undefined);
        s.end(packet);
      });
    } catch (err) {
      this.log.info({ err, database: target.route.databaseId }, 'front door: cancel not delivered');
    } finally {
      stream?.destroy();
    }
  }
}
