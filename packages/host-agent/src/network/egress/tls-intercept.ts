/**
 * TLS interception, only for hosts a secret is bound to: the sandbox's TLS
 * is terminated with a certificate of the install's CA, each request inside
 * is decided again, and it is forwarded over a new, verified TLS connection
 * with the secret in its headers.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import { connect as tlsConnect, TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import { deny, forward, guard } from './forward';
import { logDenied } from './log';
import { track } from './sockets';
import type { EgressOptions, SandboxEgress } from './types';
import { connectUpstream, decide } from './upstream';

/** Where an intercepted TLS connection goes: its sandbox and the checked upstream. */
interface Intercepted {
  sbx: SandboxEgress;
  host: string;
  port: number;
  address: string;
}

export class TlsInterceptor {
  private readonly intercepted = new WeakMap<Duplex, Intercepted>();
  private readonly addressLists = new WeakMap<Duplex, string[]>();
  private readonly mitm = createHttpServer({ requestTimeout: 0 });

  constructor(private readonly options: EgressOptions) {
    // Nothing a sandbox sends may take the host process down: every failure ends its connection.
    this.mitm.on('request', (req, res) => {
      guard(req, res);
      this.onIntercepted(req, res).catch(() => res.destroy());
    });
    this.mitm.on('clientError', (_err, socket) => socket.destroy());
  }

  /** Terminates the sandbox's TLS with a certificate of the install's CA, to add the secret. */
  async intercept(
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
    track(sbx, tls);
    this.intercepted.set(tls, { sbx, host, port, address: addresses[0]! });
    this.mitm.emit('connection', tls);
    // Later requests on this connection reuse the same checked addresses.
    this.addressLists.set(tls, addresses);
  }

  /** A request inside an intercepted TLS connection: forwarded over a new, verified TLS connection. */
  private async onIntercepted(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    const target = this.intercepted.get(req.socket);
    const addresses = this.addressLists.get(req.socket);
    if (!target || !addresses) return void req.socket.destroy();
    const { sbx, host, port } = target;
    // The policy may have changed since the tunnel opened: decide again for every request.
    const { decision } = await decide(this.options, sbx, host, port);
    if (!decision.allowed) {
      logDenied(this.options, sbx, { protocol: 'connect', host, port }, decision.reason, started);
      return deny(res, decision.reason);
    }
    forward(
      this.options,
      sbx,
      req,
      res,
      { protocol: 'connect', host, port, address: target.address, path: req.url ?? '/' },
      async () => {
        const tcp = await connectUpstream(this.options, addresses, port);
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
}
