/**
 * Data connections of one sandbox: the guest agent dials the data endpoint
 * once per transfer (a file, a port connection, egress) and first sends the
 * token the host issued for it. Bulk bytes travel here, not over HTTP/2:
 * raw connections are several times faster under gVisor.
 */
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { WarrenError } from '@warren/protocol';
import { DATA_TOKEN_BYTES } from '@warren/protocol/guest';

/** How long the guest has to dial a data connection it was asked for. */
export const DATA_DIAL_TIMEOUT_MS = 15_000;

/** How long a checkpoint waits for a server in the sandbox to close a connection handed to it. */
const HANDED_OFF_CLOSE_MS = 3_000;

export function newDataToken(): string {
  return randomBytes(DATA_TOKEN_BYTES / 2).toString('hex');
}

export class DataConnections {
  /** Transfers waiting for the guest to dial their data connection, by token. */
  private readonly pending = new Map<string, (socket: Socket) => void>();
  /** Data connections that carry this token are the sandbox's egress (see network/). */
  private egress: { token: string; handle: (socket: Socket) => void } | null = null;
  /**
   * Port connections (preview URLs, databases): no host socket may stay open
   * for a checkpoint. True for a connection handed to a server in the sandbox.
   */
  private readonly ports = new Map<Socket, boolean>();

  /** Port connections open now. */
  get openPorts(): number {
    return this.ports.size;
  }

  acceptEgress(token: string, handle: (socket: Socket) => void): void {
    this.egress = { token, handle };
  }

  /** A data connection starts with its transfer's token and a newline. */
  adopt(socket: Socket): void {
    socket.on('error', () => undefined);
    const onReadable = () => {
      const head = socket.read(DATA_TOKEN_BYTES + 1) as Buffer | null;
      if (head === null) return;
      socket.off('readable', onReadable);
      const token = head.subarray(0, DATA_TOKEN_BYTES).toString('latin1');
      if (this.egress?.token === token) return this.egress.handle(socket);
      const take = this.pending.get(token);
      if (!take) return socket.destroy();
      take(socket);
    };
    socket.on('readable', onReadable);
  }

  /** Waits for the guest to dial the connection of `token`; cancel() if the request failed. */
  expect(
    token: string,
    timeoutMs = DATA_DIAL_TIMEOUT_MS,
  ): { socket: Promise<Socket>; cancel(): void } {
    let cancel = () => undefined as void;
    const socket = new Promise<Socket>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(token);
        reject(
          new WarrenError('GUEST_UNAVAILABLE', 'sandbox agent did not open the data connection'),
        );
      }, timeoutMs);
      this.pending.set(token, (s) => {
        clearTimeout(timer);
        this.pending.delete(token);
        resolve(s);
      });
      cancel = () => {
        clearTimeout(timer);
        this.pending.delete(token);
      };
    });
    socket.catch(() => undefined);
    return { socket, cancel };
  }

  /** Keeps a port connection until it closes, so a checkpoint can close it first. */
  trackPort(socket: Socket, handedOff = false): void {
    this.ports.set(socket, handedOff);
    socket.once('close', () => this.ports.delete(socket));
  }

  /**
   * Closes every port connection. One handed to a server in the sandbox
   * (`OpenPortOptions.handoff`) is held there by that server's process, not
   * by the guest agent, and a checkpoint fails while the sandbox holds a host
   * socket: with `wait`, such a connection is ended and the promise waits
   * (up to HANDED_OFF_CLOSE_MS) until the server has closed its side too.
   */
  async dropPorts(wait = false): Promise<void> {
    const waits: Promise<void>[] = [];
    for (const [s, handedOff] of this.ports) {
      if (!handedOff || !wait || s.destroyed) {
        s.destroy();
        continue;
      }
      waits.push(
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => s.destroy(), HANDED_OFF_CLOSE_MS);
          s.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
          s.end();
          s.resume();
        }),
      );
    }
    await Promise.all(waits);
  }
}
