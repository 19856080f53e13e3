/**
 * The HTTP proxy side: absolute-URI requests (`GET http://host:port/path`)
 * and CONNECT tunnels. Node's own http server parses them (it is fed the
 * relayed sockets with `emit('connection')`), so no HTTP parsing is ours.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { deny, forward, guard } from './forward';
import { logDenied, logEgress } from './log';
import { splice } from './sockets';
import type { TlsInterceptor } from './tls-intercept';
import type { EgressOptions, SandboxEgress } from './types';
import { connectLogged, connectUpstream, decide } from './upstream';

export class HttpProxy {
  private readonly owners = new WeakMap<Duplex, SandboxEgress>();
  private readonly http = createHttpServer({ requestTimeout: 0 });

  constructor(
    private readonly options: EgressOptions,
    private readonly tls: TlsInterceptor,
  ) {
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
  }

  /** Hands a relayed connection of the sandbox to the http server. */
  accept(sbx: SandboxEgress, socket: Socket): void {
    this.owners.set(socket, sbx);
    this.http.emit('connection', socket);
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
    const { decision, addresses, host } = await decide(this.options, sbx, url.hostname, port);
    if (!decision.allowed) {
      logDenied(this.options, sbx, { protocol: 'http', host, port }, decision.reason, started);
      return deny(res, decision.reason);
    }
    let address = addresses[0]!;
    forward(
      this.options,
      sbx,
      req,
      res,
      { protocol: 'http', host, port, address, path: url.pathname + url.search },
      async () => {
        const s = await connectUpstream(this.options, addresses, port);
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
      ? await decide(this.options, sbx, m[1]!, Number(m[2]))
      : {
          decision: { allowed: false, reason: 'invalid CONNECT target' },
          addresses: [],
          host: req.url ?? '',
        };
    const port = Number(m?.[2] ?? 0);
    const record = { protocol: 'connect' as const, host, port };
    if (!decision.allowed) {
      logDenied(this.options, sbx, record, decision.reason, started);
      const body = `warren egress: denied: ${decision.reason}\n`;
      client.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nx-warren-egress: denied\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    if (sbx.secrets.has(host)) return this.tls.intercept(sbx, client, head, host, port, addresses);
    const upstream = await connectLogged(this.options, sbx, record, addresses, port, started);
    if (!upstream) {
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      return;
    }
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    splice(sbx, client, upstream, () =>
      logEgress(
        this.options,
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
