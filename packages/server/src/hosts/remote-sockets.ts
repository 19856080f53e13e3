/**
 * The WebSocket side of a remote host's client: port connections, terminal
 * attachments and the egress event subscription (reconnected when it drops).
 * The framing is described in packages/host-agent/src/remote/serve-sockets.ts.
 */
import type { Duplex } from 'node:stream';
import { createWebSocketStream, WebSocket } from 'ws';
import type { OpenPortOptions, PtyAttachHandlers, PtyAttachment } from '@warren/protocol';
import type { HostAgentConfig } from '@warren/host-agent';
import { errorFrom, unreachable, type RpcOptions } from './remote-rpc';
import type { WarrenError } from '@warren/protocol';

const MAX_PAYLOAD = 64 * 1024 * 1024;
/** How often the egress subscription checks that the agent still answers. */
const HEARTBEAT_MS = 15_000;

/** An egress decision as the host's proxy records it. */
export type EgressRecord = Parameters<NonNullable<HostAgentConfig['onEgressEvent']>>[1];

export class HostSockets {
  private readonly open = new Set<WebSocket>();

  constructor(private readonly o: RpcOptions) {}

  private connect(path: string, args?: unknown[]): WebSocket {
    const query = args ? `?args=${encodeURIComponent(JSON.stringify(args))}` : '';
    const ws = new WebSocket(`${this.o.url.replace(/^http/, 'ws')}${path}${query}`, {
      headers: { authorization: `Bearer ${this.o.credential}` },
      handshakeTimeout: this.o.timeoutMs,
      maxPayload: MAX_PAYLOAD,
      ...(this.o.ca ? { ca: this.o.ca } : {}),
    });
    this.open.add(ws);
    ws.on('close', () => this.open.delete(ws));
    return ws;
  }

  /** Calls `first` with the first message, or rejects when the socket fails before one. */
  private started<T>(ws: WebSocket, first: (m: Record<string, unknown>) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const failed = (err: WarrenError) => {
        cleanup();
        ws.terminate();
        reject(err);
      };
      const onMessage = (data: Buffer, isBinary: boolean) => {
        cleanup();
        const m = isBinary ? {} : (JSON.parse(data.toString()) as Record<string, unknown>);
        if (m.error) {
          ws.close();
          return reject(errorFrom(500, m));
        }
        resolve(first(m));
      };
      const onResponse = (_req: unknown, res: import('node:http').IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let body: unknown = null;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString());
          } catch {
            /* not JSON */
          }
          failed(errorFrom(res.statusCode ?? 500, body));
        });
      };
      const onError = (err: Error) => failed(unreachable(this.o, err));
      const onClose = () => failed(unreachable(this.o, new Error('closed before the call began')));
      const cleanup = () => {
        ws.off('message', onMessage);
        ws.off('unexpected-response', onResponse);
        ws.off('error', onError);
        ws.off('close', onClose);
        ws.on('error', () => undefined);
      };
      ws.on('message', onMessage);
      ws.on('unexpected-response', onResponse);
      ws.on('error', onError);
      ws.on('close', onClose);
    });
  }

  async openPort(id: string, port: number, options?: OpenPortOptions): Promise<Duplex> {
    const ws = this.connect('/host/sandboxes/openPort', options ? [id, port, options] : [id, port]);
    // The stream is made in the first message's handler, so no data frame after it is missed.
    return this.started(ws, () => createWebSocketStream(ws));
  }

  async attach(args: unknown[], handlers: PtyAttachHandlers): Promise<PtyAttachment> {
    const ws = this.connect('/host/pty/attach', args);
    let ended = false;
    let detached = false;
    const end = () => {
      if (ended || detached) return;
      ended = true;
      handlers.onEnd();
    };
    const attachment = await this.started(ws, () => {
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        if (isBinary) return handlers.onData(Buffer.from(data));
        const m = JSON.parse(data.toString()) as {
          t: string;
          offset?: number;
          status?: { exit_code: number; signal: string | null };
        };
        if (m.t === 'start') handlers.onStart?.(m.offset ?? 0);
        else if (m.t === 'exit') handlers.onExit(m.status!);
        else if (m.t === 'end') end();
      });
      // The agent went away (or dropped the socket): the session lives on, attach again.
      ws.on('close', end);
      return {
        write(data: Buffer) {
          if (ws.readyState === ws.OPEN) ws.send(data, { binary: true });
        },
        close() {
          detached = true;
          ws.close();
        },
      } satisfies PtyAttachment;
    });
    return attachment;
  }

  /** Subscribes to egress events until `stop`; resolves once the first attempt has settled. */
  subscribe(onEvent: (sandboxId: string, e: EgressRecord) => void): {
    ready: Promise<void>;
    stop(): void;
  } {
    let stopped = false;
    let delay = 250;
    let current: WebSocket | null = null;
    let timer: NodeJS.Timeout | null = null;
    let settle: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (settle = resolve));
    const dial = () => {
      timer = null;
      if (stopped) return;
      const ws = (current = this.connect('/host/events'));
      let heartbeat: NodeJS.Timeout | null = null;
      ws.on('open', () => {
        delay = 250;
        settle();
        // A host that vanished without closing (power, partition) is noticed: no pong, redial.
        let alive = true;
        ws.on('pong', () => (alive = true));
        heartbeat = setInterval(() => {
          if (!alive) return ws.terminate();
          alive = false;
          ws.ping();
        }, HEARTBEAT_MS);
        heartbeat.unref();
      });
      ws.on('message', (data: Buffer) => {
        const m = JSON.parse(data.toString()) as { sandbox_id: string; event: EgressRecord };
        onEvent(m.sandbox_id, m.event);
      });
      ws.on('error', () => undefined);
      ws.on('unexpected-response', (_req, res) => {
        res.resume();
        ws.terminate();
      });
      ws.on('close', () => {
        settle();
        if (heartbeat) clearInterval(heartbeat);
        if (stopped) return;
        timer = setTimeout(dial, delay);
        timer.unref();
        delay = Math.min(delay * 2, 5000);
      });
    };
    dial();
    return {
      ready,
      stop() {
        stopped = true;
        if (timer) clearTimeout(timer);
        current?.terminate();
      },
    };
  }

  /** Drops every open socket (ports, terminals, the subscription). */
  closeAll(): void {
    for (const ws of this.open) ws.terminate();
  }
}
