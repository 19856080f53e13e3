/**
 * Preview URLs: `http://{port}-{sandbox id}.<preview domain>` reaches a TCP
 * port on the sandbox's loopback. Sandboxes have no network device, so every
 * connection goes through the guest agent: it connects to the port inside and
 * pipes the bytes over a data connection to the host (HostApi's openPort).
 *
 * Plain requests are proxied one by one with Node's HTTP client over a
 * keep-alive pool of such connections per sandbox and port, so a request on
 * a warm pool costs no round trip to the guest agent. Upgrades (WebSocket)
 * get a connection of their own and are then piped byte for byte.
 */
import { Agent, request as httpRequest, STATUS_CODES } from 'node:http';
import type {
  ClientRequest,
  IncomingHttpHeaders,
  IncomingMessage,
  ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import { WarrenError, newId } from '@warren/protocol';
import type { AppContext } from '../context';
import { toWarrenError } from '../errors';
import type { SandboxRecord } from '../store/store';
import { matchesSandbox } from '../keys/restriction';
import {
  apiKeyHeader,
  checkPreviewAuth,
  presentedToken,
  tokenComesOut,
  tokenCookie,
  withoutToken,
} from './auth';

export interface PreviewTarget {
  port: number;
  sandboxId: string;
}

/** Matches `{port}-{id}.<domain>` with an optional `:port`; the id may leave out `sbx_`. */
export function previewHostMatcher(
  domain: string,
): (host: string | undefined) => PreviewTarget | null {
  const escaped = domain.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(
    `^(\\d{1,5})-((?:sbx_)?[a-z0-9]{1,64})\\.${escaped}\\.?(?::\\d{1,5})?$`,
    'i',
  );
  return (host) => {
    const m = host ? re.exec(host) : null;
    if (!m) return null;
    const id = m[2]!.toLowerCase();
    return { port: Number(m[1]), sandboxId: id.startsWith('sbx_') ? id : `sbx_${id}` };
  };
}

/** Idle pooled connections are closed after this long. */
const IDLE_MS = 10_000;
/** A request within this long of the last recorded activity does not record it again. */
const TOUCH_INTERVAL_MS = 1_000;

/** A keep-alive pool of connections to one port of one sandbox. */
class PortAgent extends Agent {
  constructor(
    private readonly open: () => Promise<Duplex>,
    /** Called once the pool holds no connection and no request waits. */
    private readonly onEmpty: (agent: PortAgent) => void,
  ) {
    super({ keepAlive: true, timeout: IDLE_MS, maxFreeSockets: 16, scheduling: 'lifo' });
  }

  override createConnection(
    _options: unknown,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): undefined {
    this.open().then(
      (socket) => {
        // The data connection was read in paused mode for its token; the HTTP client reads events.
        socket.resume();
        // After the Agent's own close handler has taken the socket out of its lists.
        socket.once('close', () => setImmediate(() => this.checkEmpty()));
        callback?.(null, socket);
      },
      (err: Error) => {
        callback?.(err, undefined as unknown as Duplex);
        setImmediate(() => this.checkEmpty());
      },
    );
    return undefined;
  }

  private checkEmpty(): void {
    const lists = [this.sockets, this.freeSockets, this.requests];
    if (lists.every((l) => Object.keys(l).length === 0)) this.onEmpty(this);
  }
}

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade'];

function dropHopByHop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out = { ...headers };
  const listed = typeof out.connection === 'string' ? out.connection.split(',') : [];
  for (const name of [...HOP_BY_HOP, ...listed.map((n) => n.trim().toLowerCase())])
    if (name !== 'transfer-encoding') delete out[name];
  return out;
}

function forwardedFor(req: IncomingMessage, headers: IncomingHttpHeaders): void {
  const addr = req.socket.remoteAddress ?? '';
  const prior = headers['x-forwarded-for'];
  headers['x-forwarded-for'] = prior ? `${String(prior)}, ${addr}` : addr;
  headers['x-forwarded-host'] ??= req.headers.host;
  headers['x-forwarded-proto'] ??= 'http';
}

function errorBody(err: unknown): { status: number; body: string } {
  const e = toWarrenError(err as Error);
  return { status: e.status, body: JSON.stringify(e.toBody(newId('request'))) };
}

interface Opened {
  row: SandboxRecord;
  url: URL;
}

export class PreviewProxy {
  /** Set by the app once its logger exists. */
  log: { error(obj: object, msg: string): void } = { error: () => undefined };
  readonly match: (host: string | undefined) => PreviewTarget | null;
  /** Connection pools by sandbox and port; a sandbox's go when it stops (see closeIdle). */
  private readonly agents = new Map<string, Map<number, PortAgent>>();
  /** Upgraded connections and answers in progress, closed when the platform stops. */
  private readonly piped = new Set<Duplex>();
  private readonly answering = new Set<ServerResponse>();

  private matcher: ((host: string | undefined) => PreviewTarget | null) | null = null;

  constructor(private readonly ctx: AppContext) {
    // Built on first use: the OpenAPI generator builds the app without a configuration.
    this.match = (host) =>
      (this.matcher ??= previewHostMatcher(this.ctx.config.previewDomain))(host);
  }

  private agent(sandboxId: string, port: number): PortAgent {
    let ports = this.agents.get(sandboxId);
    if (!ports) this.agents.set(sandboxId, (ports = new Map()));
    let agent = ports.get(port);
    if (!agent) {
      const open = () => this.ctx.guest.openPort(sandboxId, port);
      agent = new PortAgent(open, (empty) => {
        if (ports.get(port) !== empty) return;
        ports.delete(port);
        if (ports.size === 0) this.agents.delete(sandboxId);
        empty.destroy();
      });
      ports.set(port, agent);
    }
    return agent;
  }

  /** Finds the sandbox, checks the token, wakes it if needed and counts the request as activity. */
  private async open(target: PreviewTarget, req: IncomingMessage): Promise<Opened> {
    if (target.port < 1 || target.port > 65535)
      throw new WarrenError('INVALID_REQUEST', 'the port in a preview URL is 1 to 65535');
    const url = new URL(req.url ?? '/', 'http://preview');
    const row = await this.ctx.sandboxes.anyOrganisation(target.sandboxId);
    await this.checkApiKey(req, row);
    checkPreviewAuth(row, presentedToken(req, url));
    const recent =
      row.state === 'running' && Date.now() - Date.parse(row.last_activity_at) < TOUCH_INTERVAL_MS;
    if (!recent) await this.ctx.sandboxes.use(row.org_id, row.id);
    return { row, url };
  }

  /** With an API key, the sandbox of another organisation (or outside its restriction) does not exist. */
  private async checkApiKey(req: IncomingMessage, row: SandboxRecord): Promise<void> {
    const header = apiKeyHeader(req.headers);
    if (!header) return;
    // Counted like the API's: guessing keys through preview URLs is limited too.
    const p = await this.ctx.keys.authenticateFrom(req.socket.remoteAddress ?? '', header);
    if (p.orgId !== row.org_id || !matchesSandbox(p.restriction, row))
      throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${row.id} does not exist`);
  }

  /** The `request` event of a preview host. */
  handleRequest(req: IncomingMessage, res: ServerResponse, target: PreviewTarget): void {
    this.answering.add(res);
    res.once('close', () => this.answering.delete(res));
    this.serve(req, res, target).catch((err: unknown) => this.fail(res, err));
  }

  private async serve(req: IncomingMessage, res: ServerResponse, target: PreviewTarget) {
    const { url } = await this.open(target, req);
    const presented = presentedToken(req, url);
    if (presented?.from === 'query' && tokenComesOut(req.method)) {
      // Browsers: keep the token in a cookie of this host and show the URL without it.
      const { path } = withoutToken(req.url ?? '/', url, req.headers);
      const secure = req.headers['x-forwarded-proto'] === 'https';
      res.writeHead(302, { location: path, 'set-cookie': tokenCookie(presented.token, secure) });
      res.end();
      return;
    }
    const { path, headers } = withoutToken(req.url ?? '/', url, dropHopByHop(req.headers));
    forwardedFor(req, headers);
    this.forward(req, res, this.agent(target.sandboxId, target.port), path, headers, true);
  }

  private forward(
    req: IncomingMessage,
    res: ServerResponse,
    agent: PortAgent,
    path: string,
    headers: IncomingHttpHeaders,
    mayRetry: boolean,
  ): void {
    const upstream: ClientRequest = httpRequest({ agent, method: req.method, path, headers });
    upstream.on('response', (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, dropHopByHop(up.headers));
      // Each chunk goes out as it arrives: streamed answers stay streamed.
      up.pipe(res);
      up.on('error', () => res.destroy());
    });
    upstream.on('error', (err) => {
      // A pooled connection the server in the sandbox had just closed: try a fresh one, once.
      const idempotent = req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS';
      if (mayRetry && upstream.reusedSocket && idempotent && !res.headersSent)
        return this.forward(req, res, agent, path, headers, false);
      this.fail(res, err);
    });
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    if (req.readableEnded) upstream.end();
    else req.pipe(upstream);
  }

  private fail(res: ServerResponse, err: unknown): void {
    if (res.destroyed) return; // the client went away
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const { status, body } = errorBody(connectionError(err));
    if (status >= 500 && !(err instanceof WarrenError))
      this.log.error({ err }, 'preview request failed');
    const retry =
      err instanceof WarrenError
        ? (err.details as { retry_after_seconds?: unknown } | undefined)?.retry_after_seconds
        : undefined;
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      ...(typeof retry === 'number' && { 'retry-after': String(retry) }),
    });
    res.end(body);
  }

  /** The `upgrade` event of a preview host: its own connection, piped both ways. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: PreviewTarget): void {
    socket.on('error', () => socket.destroy());
    this.upgrade(req, socket, head, target).catch((err: unknown) => {
      const { status, body } = errorBody(connectionError(err));
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json; charset=utf-8\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    });
  }

  private async upgrade(req: IncomingMessage, client: Duplex, head: Buffer, target: PreviewTarget) {
    const { url } = await this.open(target, req);
    const { path, headers } = withoutToken(req.url ?? '/', url, req.headers);
    forwardedFor(req, headers);
    const data = await this.ctx.guest.openPort(target.sandboxId, target.port);
    if (client.destroyed) return void data.destroy();
    let text = `${req.method ?? 'GET'} ${path} HTTP/${req.httpVersion}\r\n`;
    for (const [name, value] of Object.entries(headers)) {
      for (const v of Array.isArray(value) ? value : [value])
        if (v !== undefined) text += `${name}: ${v}\r\n`;
    }
    data.write(text + '\r\n');
    if (head.length) data.write(head);
    this.piped.add(client);
    client.once('close', () => this.piped.delete(client));
    splice(client, data);
  }

  /** Closes client connections still in use (pooled ones close with their sandbox's channel). */
  close(): void {
    for (const s of this.piped) s.destroy();
    for (const res of this.answering) res.destroy();
    this.piped.clear();
    this.answering.clear();
  }
}

/** Errors of the connection to the sandbox's port get a stable code. */
function connectionError(err: unknown): unknown {
  if (err instanceof WarrenError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return new WarrenError(
    'GUEST_UNAVAILABLE',
    `the connection to the port in the sandbox broke off${code ? ` (${code})` : ''}`,
  );
}

/** Pipes two streams both ways; an orderly end travels across, an error tears both down. */
function splice(a: Duplex, b: Duplex): void {
  a.pipe(b);
  b.pipe(a);
  const link = (from: Duplex, to: Duplex) => {
    from.on('error', () => to.destroy());
    from.once('close', () => (from.readableEnded ? to.end() : to.destroy()));
  };
  link(a, b);
  link(b, a);
}
