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
 *
 * The pieces are in ./egress: the HTTP proxy (http-proxy.ts), SOCKS5
 * (socks5.ts), TLS interception for bound secrets (tls-intercept.ts), request
 * relaying (forward.ts), policy decisions and upstream connections
 * (upstream.ts), socket plumbing (sockets.ts) and records (log.ts).
 */
import type { Socket } from 'node:net';
import type { EgressSecret, NetworkPolicy } from '@warren/protocol';
import { HttpProxy } from './egress/http-proxy';
import { socks5 } from './egress/socks5';
import { readBytes, track } from './egress/sockets';
import { TlsInterceptor } from './egress/tls-intercept';
import type { EgressOptions, SandboxEgress } from './egress/types';
import { compilePolicy, normaliseName, type CompiledPolicy } from './policy';

export type { EgressOptions, EgressRecord } from './egress/types';

/** Bytes a sandbox's egress connections carried: those closed, and the ones still open. */
interface Traffic {
  rx: number;
  tx: number;
  open: Set<Socket>;
}

export class EgressProxy {
  private readonly sandboxes = new Map<string, SandboxEgress>();
  private readonly traffic = new Map<string, Traffic>();
  private readonly http: HttpProxy;

  constructor(readonly options: EgressOptions) {
    this.http = new HttpProxy(options, new TlsInterceptor(options));
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
    this.traffic.delete(id);
    for (const s of sbx?.sockets ?? []) s.destroy();
  }

  /**
   * Bytes relayed into (rx) and out of (tx) a sandbox over its egress
   * connections since it was configured, counted on the relayed sockets
   * (what the sandbox's clients sent and got, proxy requests included).
   */
  bytes(id: string): { rx: number; tx: number } {
    const t = this.traffic.get(id);
    if (!t) return { rx: 0, tx: 0 };
    let { rx, tx } = t;
    for (const s of t.open) {
      rx += s.bytesWritten;
      tx += s.bytesRead;
    }
    return { rx, tx };
  }

  private count(id: string, socket: Socket): void {
    let t = this.traffic.get(id);
    if (!t) this.traffic.set(id, (t = { rx: 0, tx: 0, open: new Set() }));
    const traffic = t;
    traffic.open.add(socket);
    socket.once('close', () => {
      if (!traffic.open.delete(socket)) return;
      traffic.rx += socket.bytesWritten;
      traffic.tx += socket.bytesRead;
    });
  }

  /** A connection the sandbox's guest agent relayed: SOCKS5 starts with byte 5, HTTP with a letter. */
  handle(id: string, socket: Socket): void {
    const sbx = this.sandboxes.get(id);
    socket.on('error', () => undefined);
    if (!sbx) return void socket.destroy();
    track(sbx, socket);
    this.count(id, socket);
    readBytes(socket, 1).then(
      (first) => {
        socket.unshift(first);
        if (first[0] === 5) {
          return void socks5(this.options, sbx, socket).catch(() => socket.destroy());
        }
        this.http.accept(sbx, socket);
      },
      () => socket.destroy(),
    );
  }
}
