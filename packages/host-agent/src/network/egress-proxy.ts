/**
 * The host-side egress proxy. A sandbox has no network device: its guest
 * agent listens on loopback ports inside it and relays every connection to
 * the host over the agent channel's data socket. Here each relayed
 * connection is read as what the client speaks — an HTTP proxy request
 * (absolute URI or CONNECT) or SOCKS5 — and the sandbox's policy decides,
 * on addresses this host resolved itself, before one byte goes out.
 *
 * Node's own http server parses the proxy requests (it is fed the relayed
 * sockets with `emit('connection')`), so no HTTP parsing is ours. SOCKS5 is
 * read here: only CONNECT with no authentication is needed (the channel
 * already says which sandbox it is), a few dozen lines; the npm SOCKS server
 * packages are unmaintained and want to own a listening socket.
 */
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import type { EgressSecret, NetworkPolicy } from '@warren/protocol';
import type { AddressGuard } from './addresses';
import type { EgressCa } from './ca';
import {
  compilePolicy,
  decide,
  normaliseName,
  precheck,
  type CompiledPolicy,
  type Decision,
  type Presets,
} from './policy';
import type { Resolver } from './resolver';

export interface EgressRecord {
  at: string;
  protocol: 'http' | 'connect' | 'socks5';
  host: string;
  port: number;
  address: string | null;
  decision: 'allowed' | 'denied';
  reason: string;
  bytes_out: number;
  bytes_in: number;
  duration_ms: number;
}

export interface EgressOptions {
  ca: EgressCa;
  resolver: Resolver;
  guard: AddressGuard;
  presets: Presets;
  /** Every decision, with byte counts once the connection is over. */
  onEvent: (sandboxId: string, event: EgressRecord) => void;
  connectTimeoutMs?: number;
}

interface SandboxEgress {
  id: string;
  policy: CompiledPolicy;
  secrets: Map<string, Array<{ header: string; value: string }>>;
  sockets: Set<Duplex>;
}

/** Where an intercepted TLS connection goes: its sandbox and the checked upstream. */
interface Intercepted {
  sbx: SandboxEgress;
  host: string;
  port: number;
  address: string;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'upgrade',
]);

export class EgressProxy {
  private readonly sandboxes = new Map<string, SandboxEgress>();
  private readonly owners = new WeakMap<Duplex, SandboxEgress>();
  private readonly intercepted = new WeakMap<Duplex, Intercepted>();
  private readonly http = createHttpServer({ requestTimeout: 0 });
  private readonly mitm = createHttpServer({ requestTimeout: 0 });

  constructor(readonly options: EgressOptions) {
    // Nothing a sandbox sends may take the host process down: every failure ends its connection.
    this.http.on('request', (req, res) => {
      guard(req, res);
      this.onHttp(req, res).catch(() => res.destroy());
    });
    this.http.on('connect', (req, socket: Duplex, head) => {
      socket.on('error', () => undefined);
      this.onConnect(req, socket, head).catch(() => socket.destroy());
    });
    this.http.on('clientError', (_err, socket) => socket.destroy());
    this.mitm.on('request', (req, res) => {
      guard(req, res);
      this.onIntercepted(req, res).catch(() => res.destroy());
    });
    this.mitm.on('clientError', (_err, socket) => socket.destroy());
  }

  get caPem(): string {
    return this.options.ca.certPem;
  }

  /** Validates a policy (and its presets); throws INVALID_NETWORK_POLICY. */
  compile(policy: NetworkPolicy): CompiledPolicy {
    return compilePolicy(policy, this.options.presets);
  }

  /** Sets (or replaces) a sandbox's policy and secrets; connections already open stay. */
  configure(id: string, policy: NetworkPolicy, secrets: EgressSecret[]): void {
    const compiled = this.compile(policy);
    const bound = new Map<string, Array<{ header: string; value: string }>>();
    for (const s of secrets) {
      const host = normaliseName(s.host) ?? s.host.toLowerCase();
      bound.set(host, [...(bound.get(host) ?? []), { header: s.header, value: s.value }]);
    }
    const sbx = this.sandboxes.get(id);
    if (sbx) {
      sbx.policy = compiled;
      sbx.secrets = bound;
    } else this.sandboxes.set(id, { id, policy: compiled, secrets: bound, sockets: new Set() });
  }

  /** Forgets a sandbox and cuts its connections (destroy, hibernate). */
  detach(id: string): void {
    const sbx = this.sandboxes.get(id);
    this.sandboxes.delete(id);
    for (const s of sbx?.sockets ?? []) s.destroy();
  }

  /** A connection the sandbox's guest agent relayed: SOCKS5 starts with byte 5, HTTP with a letter. */
  handle(id: string, socket: Socket): void {
    const sbx = this.sandboxes.get(id);
    socket.on('error', () => undefined);
    if (!sbx) return void socket.destroy();
    this.track(sbx, socket);
    readBytes(socket, 1).then(
      (first) => {
        socket.unshift(first);
        if (first[0] === 5) return void this.socks(sbx, socket).catch(() => socket.destroy());
        this.owners.set(socket, sbx);
        this.http.emit('connection', socket);
      },
      () => socket.destroy(),
    );
  }

  private track(sbx: SandboxEgress, s: Duplex): void {
    sbx.sockets.add(s);
    s.once('close', () => sbx.sockets.delete(s));
  }

  private log(sbx: SandboxEgress, e: Omit<EgressRecord, 'at' | 'duration_ms'>, started: number) {
    this.options.onEvent(sbx.id, {
      at: new Date(started).toISOString(),
      duration_ms: Math.round(Date.now() - started),
      ...e,
    });
  }

  /** A connection the policy (or the protocol) refused: nothing went either way. */
  private logDenied(
    sbx: SandboxEgress,
    target: Pick<EgressRecord, 'protocol' | 'host' | 'port'>,
    reason: string,
    started: number,
  ): void {
    this.log(
      sbx,
      { ...target, address: null, decision: 'denied', reason, bytes_out: 0, bytes_in: 0 },
      started,
    );
  }

  /** Connects to an allowed destination; a failure is logged and gives null. */
  private async connectLogged(
    sbx: SandboxEgress,
    target: Pick<EgressRecord, 'protocol' | 'host' | 'port'>,
    addresses: string[],
    port: number,
    started: number,
  ): Promise<Socket | null> {
    try {
      return await this.connectUpstream(addresses, port);
    } catch (err) {
      this.log(
        sbx,
        {
          ...target,
          address: addresses[0] ?? null,
          decision: 'allowed',
          reason: `upstream failed: ${(err as Error).message}`,
          bytes_out: 0,
          bytes_in: 0,
        },
        started,
      );
      return null;
    }
  }

  /** The policy's decision, resolving the name on this host only when the policy may allow it. */
  private async decide(
    sbx: SandboxEgress,
    rawHost: string,
    port: number,
  ): Promise<{ decision: Decision; addresses: string[]; host: string }> {
    const host = rawHost
      .replace(/^\[|\]$/g, '')
      .toLowerCase()
      .replace(/\.$/, '');
    const dest = { host, port };
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      return { decision: { allowed: false, reason: 'invalid port' }, addresses: [], host };
    const pre = precheck(sbx.policy, dest);
    if (pre) return { decision: pre, addresses: [], host };
    const addresses = await this.options.resolver.resolve(host);
    return { decision: decide(sbx.policy, dest, addresses, this.options.guard), addresses, host };
  }

  /** Connects to the first of the checked addresses that answers. */
  private async connectUpstream(addresses: string[], port: number): Promise<Socket> {
    let last: Error = new Error('no address');
    for (const address of addresses) {
      try {
        return await new Promise<Socket>((resolve, reject) => {
          const s = netConnect({ host: address, port, noDelay: true });
          const timer = setTimeout(
            () => s.destroy(new Error('connect timed out')),
            this.options.connectTimeoutMs ?? 10_000,
          );
          s.once('connect', () => {
            clearTimeout(timer);
            s.off('error', reject);
            s.on('error', () => undefined);
            resolve(s);
          });
          s.once('error', (err) => {
            clearTimeout(timer);
            reject(err);
          });
        });
      } catch (err) {
        last = err as Error;
      }
    }
    throw last;
  }

  private headersFor(sbx: SandboxEgress, host: string, raw: string[]): OutgoingHttpHeaders {
    const secrets = sbx.secrets.get(host) ?? [];
    const replaced = new Set(secrets.map((s) => s.header.toLowerCase()));
    const headers: Record<string, string | string[]> = {};
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!;
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower) || replaced.has(lower)) continue;
      const prev = headers[name];
      headers[name] = prev === undefined ? raw[i + 1]! : [prev, raw[i + 1]!].flat();
    }
    for (const s of secrets) headers[s.header] = s.value;
    return headers;
  }

  /** Relays one request upstream and the answer back; logs it with its byte counts. */
  private forward(
    sbx: SandboxEgress,
    req: IncomingMessage,
    res: ServerResponse,
    target: {
      protocol: 'http' | 'connect';
      host: string;
      port: number;
      address: string;
      path: string;
    },
    open: () => Promise<Duplex>,
    started: number,
  ): void {
    let out = 0;
    let inb = 0;
    let reason = 'allowed';
    req.on('data', (c: Buffer) => (out += c.length));
    const make = target.protocol === 'http' ? httpRequest : httpsRequest;
    const upstream = make({
      method: req.method,
      path: target.path,
      headers: this.headersFor(sbx, target.host, req.rawHeaders),
      setHost: false,
      // No agent: the connection is ours, to the address the policy checked.
      createConnection: ((_o: unknown, cb: (err: Error | null, s?: Duplex) => void) => {
        open().then(
          (s) => cb(null, s),
          (err: Error) => cb(err),
        );
      }) as never,
    });
    upstream.on('response', (ur) => {
      ur.on('error', () => res.destroy());
      const headers: string[] = [];
      for (let i = 0; i + 1 < ur.rawHeaders.length; i += 2)
        if (!HOP_BY_HOP.has(ur.rawHeaders[i]!.toLowerCase()))
          headers.push(ur.rawHeaders[i]!, ur.rawHeaders[i + 1]!);
      res.writeHead(ur.statusCode ?? 502, ur.statusMessage, headers);
      ur.on('data', (c: Buffer) => (inb += c.length));
      ur.pipe(res);
    });
    upstream.on('error', (err) => {
      reason = `upstream failed: ${err.message}`;
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain', 'x-warren-egress': 'upstream-error' });
        res.end(`warren egress: ${reason}\n`);
      } else res.destroy();
    });
    res.on('close', () => {
      upstream.destroy();
      this.log(
        sbx,
        {
          protocol: target.protocol,
          host: target.host,
          port: target.port,
          address: target.address,
          decision: 'allowed',
          reason,
          bytes_out: out,
          bytes_in: inb,
        },
        started,
      );
    });
    req.pipe(upstream);
  }

  private deny(res: ServerResponse, reason: string): void {
    res.writeHead(403, { 'content-type': 'text/plain', 'x-warren-egress': 'denied' });
    res.end(`warren egress: denied: ${reason}\n`);
  }

  /** A plain-HTTP proxy request: `GET http://host:port/path`. */
  private async onHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    const sbx = this.owners.get(req.socket);
    if (!sbx) return void req.socket.destroy();
    let url: URL;
    try {
      url = new URL(req.url ?? '');
      if (url.protocol !== 'http:') throw new Error('not http');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end('warren egress: send absolute http:// URLs, or CONNECT for anything else\n');
      return;
    }
    const port = Number(url.port || 80);
    const { decision, addresses, host } = await this.decide(sbx, url.hostname, port);
    if (!decision.allowed) {
      this.logDenied(sbx, { protocol: 'http', host, port }, decision.reason, started);
      return this.deny(res, decision.reason);
    }
    let address = addresses[0]!;
    this.forward(
      sbx,
      req,
      res,
      { protocol: 'http', host, port, address, path: url.pathname + url.search },
      async () => {
        const s = await this.connectUpstream(addresses, port);
        address = s.remoteAddress ?? address;
        return s;
      },
      started,
    );
  }

  /** CONNECT host:port: a tunnel; TLS is terminated only when a secret is bound to the host. */
  private async onConnect(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const started = Date.now();
    const sbx = this.owners.get(req.socket) ?? this.owners.get(client);
    client.on('error', () => undefined);
    if (!sbx) return void client.destroy();
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? '');
    const { decision, addresses, host } = m
      ? await this.decide(sbx, m[1]!, Number(m[2]))
      : {
          decision: { allowed: false, reason: 'invalid CONNECT target' },
          addresses: [],
          host: req.url ?? '',
        };
    const port = Number(m?.[2] ?? 0);
    const record = { protocol: 'connect' as const, host, port };
    if (!decision.allowed) {
      this.logDenied(sbx, record, decision.reason, started);
      const body = `warren egress: denied: ${decision.reason}\n`;
      client.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nx-warren-egress: denied\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    if (sbx.secrets.has(host)) return this.intercept(sbx, client, head, host, port, addresses);
    const upstream = await this.connectLogged(sbx, record, addresses, port, started);
    if (!upstream) {
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      return;
    }
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    this.splice(sbx, client, upstream, () =>
      this.log(
        sbx,
        {
          ...record,
          address: upstream.remoteAddress ?? addresses[0]!,
          decision: 'allowed',
          reason: decision.reason,
          bytes_out: upstream.bytesWritten,
          bytes_in: upstream.bytesRead,
        },
        started,
      ),
    );
  }

  /** Terminates the sandbox's TLS with a certificate of the install's CA, to add the secret. */
  private async intercept(
    sbx: SandboxEgress,
    client: Duplex,
    head: Buffer,
    host: string,
    port: number,
    addresses: string[],
  ): Promise<void> {
    const secureContext = await this.options.ca.contextFor(host);
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) client.unshift(head);
    const tls = new TLSSocket(client as Socket, {
      isServer: true,
      secureContext,
      ALPNProtocols: ['http/1.1'],
    });
    tls.on('error', () => client.destroy());
    this.track(sbx, tls);
    this.intercepted.set(tls, { sbx, host, port, address: addresses[0]! });
    this.mitm.emit('connection', tls);
    // Later requests on this connection reuse the same checked addresses.
    this.addressLists.set(tls, addresses);
  }

  private readonly addressLists = new WeakMap<Duplex, string[]>();

  /** A request inside an intercepted TLS connection: forwarded over a new, verified TLS connection. */
  private async onIntercepted(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    const target = this.intercepted.get(req.socket);
    const addresses = this.addressLists.get(req.socket);
    if (!target || !addresses) return void req.socket.destroy();
    const { sbx, host, port } = target;
    // The policy may have changed since the tunnel opened: decide again for every request.
    const { decision } = await this.decide(sbx, host, port);
    if (!decision.allowed) {
      this.logDenied(sbx, { protocol: 'connect', host, port }, decision.reason, started);
      return this.deny(res, decision.reason);
    }
    this.forward(
      sbx,
      req,
      res,
      { protocol: 'connect', host, port, address: target.address, path: req.url ?? '/' },
      async () => {
        const tcp = await this.connectUpstream(addresses, port);
        const tls = tlsConnect({
          socket: tcp,
          servername: host,
          ca: this.options.ca.upstreamCa,
          ALPNProtocols: ['http/1.1'],
        });
        tls.on('error', () => tcp.destroy());
        return tls;
      },
      started,
    );
  }

  /**
   * Pipes two sockets into each other. An end on one side ends the other
   * after what is buffered is written (nothing is cut off); an error or a
   * reset tears both down. `done` runs once, when both are closed.
   */
  private splice(sbx: SandboxEgress, a: Duplex, b: Socket, done: () => void): void {
    this.track(sbx, b);
    let closed = 0;
    const onClose = (other: Duplex) => (hadError: boolean) => {
      if (hadError) other.destroy();
      else other.end();
      if (++closed === 2) done();
    };
    a.once('close', onClose(b));
    b.once('close', onClose(a));
    a.on('error', () => b.destroy());
    b.on('error', () => a.destroy());
    a.pipe(b);
    b.pipe(a);
  }

  /** SOCKS5, CONNECT only, no authentication (RFC 1928). */
  private async socks(sbx: SandboxEgress, socket: Socket): Promise<void> {
    const started = Date.now();
    let host = '';
    let port = 0;
    try {
      const [, n = 0] = await readBytes(socket, 2);
      const methods = await readBytes(socket, n);
      if (!methods.includes(0)) return void socket.end(Buffer.from([5, 0xff]));
      socket.write(Buffer.from([5, 0]));
      const [ver, cmd, , atyp] = await readBytes(socket, 4);
      if (atyp === 1) host = [...(await readBytes(socket, 4))].join('.');
      else if (atyp === 4) {
        const b = await readBytes(socket, 16);
        host = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2).toString(16)).join(':');
      } else if (atyp === 3) {
        const [len = 0] = await readBytes(socket, 1);
        host = (await readBytes(socket, len)).toString('latin1');
      } else return void socket.end(Buffer.from([5, 8, 0, 1, 0, 0, 0, 0, 0, 0]));
      port = (await readBytes(socket, 2)).readUInt16BE(0);
      if (ver !== 5 || cmd !== 1) {
        // BIND and UDP ASSOCIATE are refused: no UDP leaves a sandbox.
        this.logDenied(
          sbx,
          { protocol: 'socks5', host, port },
          `SOCKS command ${cmd} not supported`,
          started,
        );
        return void socket.end(Buffer.from([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]));
      }
    } catch {
      return void socket.destroy();
    }
    const { decision, addresses, host: name } = await this.decide(sbx, host, port);
    const record = { protocol: 'socks5' as const, host: name, port };
    if (!decision.allowed) {
      this.logDenied(sbx, record, decision.reason, started);
      return void socket.end(Buffer.from([5, 2, 0, 1, 0, 0, 0, 0, 0, 0]));
    }
    const upstream = await this.connectLogged(sbx, record, addresses, port, started);
    if (!upstream) {
      return void socket.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]));
    }
    socket.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
    this.splice(sbx, socket, upstream, () =>
      this.log(
        sbx,
        {
          ...record,
          address: upstream.remoteAddress ?? addresses[0]!,
          decision: 'allowed',
          reason: decision.reason,
          bytes_out: upstream.bytesWritten,
          bytes_in: upstream.bytesRead,
        },
        started,
      ),
    );
  }
}

/** A request or response that errors (a client or server going away) is torn down, not thrown. */
function guard(req: IncomingMessage, res: ServerResponse): void {
  req.on('error', () => res.destroy());
  res.on('error', () => req.destroy());
}

/** Reads exactly n bytes from a paused socket. */
function readBytes(socket: Duplex, n: number): Promise<Buffer> {
  if (n === 0) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      socket.off('readable', attempt);
      socket.off('end', gone);
      socket.off('close', gone);
    };
    const attempt = () => {
      const b = socket.read(n) as Buffer | null;
      if (b === null) return;
      cleanup();
      resolve(b);
    };
    const gone = () => {
      cleanup();
      reject(new Error('connection closed'));
    };
    socket.on('readable', attempt);
    socket.on('end', gone);
    socket.on('close', gone);
    attempt();
  });
}
