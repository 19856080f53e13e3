/**
 * Port connections for preview URLs: the host asks for a TCP connection to a
 * port on the sandbox's loopback; the agent opens it and pipes it, byte for
 * byte, over a data connection to the host. HTTP, keep-alive, streaming and
 * WebSocket upgrades all pass through unchanged. The native relay does it
 * where it runs (see relay.ts); these streams where it does not.
 *
 * With `handoff` (database connections) the relay instead hands the data
 * connection itself to the server listening on that Unix socket, which then
 * reads and writes the host socket without the relay in between.
 */
import { connect, type Socket } from 'node:net';
import { WarrenError } from '@warren/protocol/errors';
import type { PortConnect } from '@warren/protocol/guest';
import { dialData } from './data';
import { relay } from './relay';

/** Both ends of every piped connection, so a checkpoint can drop them all. */
const open = new Set<Socket>();

function track(socket: Socket): void {
  open.add(socket);
  socket.once('close', () => open.delete(socket));
}

/**
 * Where bytes read from the port go. Reads use one big buffer rather than
 * the 64 KiB chunks of a stream: every write to the host socket is a system call
 * through the gVisor kernel, and fewer, larger writes move data faster.
 */
interface Sink {
  target: Socket | null;
  pending: Buffer[];
  socket: Socket | null;
}

const READ_BUFFER = 256 * 1024;

function bigReads(sink: Sink) {
  return {
    buffer: () => Buffer.allocUnsafe(READ_BUFFER),
    callback: (n: number, buf: Uint8Array): boolean => {
      const chunk = Buffer.from(buf.subarray(0, n));
      if (!sink.target) {
        sink.pending.push(chunk);
        return true;
      }
      if (sink.target.write(chunk)) return true;
      sink.target.once('drain', () => sink.socket?.resume());
      return false;
    },
  };
}

/** Servers bound to `localhost` may listen on ::1 only: try IPv4 loopback, then IPv6. */
function connectLoopback(port: number, sink: Sink): Promise<Socket> {
  const attempt = (host: string) =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect({ host, port, onread: bigReads(sink) });
      sink.socket = s;
      s.once('connect', () => {
        s.off('error', reject);
        resolve(s);
      });
      s.once('error', reject);
    });
  return attempt('127.0.0.1').catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ECONNREFUSED') throw err;
    return attempt('::1').catch(() => {
      throw err;
    });
  });
}

function notListening(port: number, err: unknown): never {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  throw new WarrenError(
    'PORT_NOT_LISTENING',
    `nothing accepts connections on port ${port} in the sandbox (${code})`,
    { port },
  );
}

/** Opens the port; resolves once it is connected and the data connection is dialed. */
export async function connectPort(req: PortConnect): Promise<void> {
  if (!Number.isInteger(req.port) || req.port < 1 || req.port > 65535)
    throw new WarrenError('INVALID_REQUEST', 'port must be an integer from 1 to 65535');
  if (req.handoff !== undefined && (typeof req.handoff !== 'string' || req.handoff.length > 100))
    throw new WarrenError('INVALID_REQUEST', 'handoff must be a Unix socket path');
  const fast = relay();
  if (fast && req.handoff)
    return fast
      .handoff(req.token, req.handoff, req.port)
      .catch((err) => notListening(req.port, err));
  if (fast) return fast.port(req.token, req.port).catch((err) => notListening(req.port, err));
  const sink: Sink = { target: null, pending: [], socket: null };
  let tcp: Socket;
  try {
    tcp = await connectLoopback(req.port, sink);
  } catch (err) {
    return notListening(req.port, err);
  }
  tcp.setNoDelay(true);
  const data = dialData(req.token);
  track(tcp);
  track(data);
  // Port -> host through the big-buffer reads above; host -> port as a plain pipe.
  sink.target = data;
  for (const c of sink.pending) data.write(c);
  sink.pending = [];
  data.pipe(tcp);
  // An orderly end travels across; an error tears both down.
  tcp.on('end', () => data.end());
  tcp.on('error', () => data.destroy());
  data.on('error', () => tcp.destroy());
  tcp.once('close', (hadError) => (hadError ? data.destroy() : data.end()));
  data.once('close', (hadError) => (hadError ? tcp.destroy() : tcp.end()));
}

/** Before a checkpoint: no host socket may stay open. */
export function closePortConnections(): void {
  for (const s of open) s.destroy();
  open.clear();
}
