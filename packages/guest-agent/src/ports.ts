/**
 * Port connections for preview URLs: the host asks for a TCP connection to a
 * port on the sandbox's loopback; the agent opens it and pipes it, byte for
 * byte, over a data connection to the host. HTTP, keep-alive, streaming and
 * WebSocket upgrades all pass through unchanged. The native relay does it
 * where it runs (see relay.ts); these streams where it does not.
 *
 * With `handoff` (database connections) the relay instead hands the data
 * connection itself to the server listening on that Unix socket, which then
 * reads and writes the host socket without the relay in between. With
 * `unix` the connection goes to that Unix socket instead of a port (the
 * platform's own connections to PostgreSQL, which trusts local users).
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

function dial(options: { host: string; port: number } | { path: string }, sink: Sink) {
  return new Promise<Socket>((resolve, reject) => {
    const s = connect({ ...options, onread: bigReads(sink) });
    sink.socket = s;
    s.once('connect', () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Servers bound to `localhost` may listen on ::1 only: try IPv4 loopback, then IPv6. */
function connectLoopback(port: number, sink: Sink): Promise<Socket> {
  return dial({ host: '127.0.0.1', port }, sink).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ECONNREFUSED') throw err;
    return dial({ host: '::1', port }, sink).catch(() => {
      throw err;
    });
  });
}

function notListening(req: PortConnect, err: unknown): never {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  const where = req.unix ? `at ${req.unix}` : `on port ${req.port}`;
  throw new WarrenError(
    'PORT_NOT_LISTENING',
    `nothing accepts connections ${where} in the sandbox (${code})`,
    req.unix ? { path: req.unix } : { port: req.port },
  );
}

/** A Unix socket path (sockaddr_un holds 107 bytes and a NUL). */
function checkUnixPath(path: unknown): void {
  if (typeof path !== 'string' || !path.startsWith('/') || Buffer.byteLength(path) > 107)
    throw new WarrenError('INVALID_REQUEST', 'unix must be an absolute Unix socket path');
}

/** Opens the port (or the Unix socket); resolves once it is connected and the data connection is dialed. */
export async function connectPort(req: PortConnect): Promise<void> {
  if (req.unix !== undefined) checkUnixPath(req.unix);
  else if (!Number.isInteger(req.port) || req.port < 1 || req.port > 65535)
    throw new WarrenError('INVALID_REQUEST', 'port must be an integer from 1 to 65535');
  if (req.handoff !== undefined && (typeof req.handoff !== 'string' || req.handoff.length > 100))
    throw new WarrenError('INVALID_REQUEST', 'handoff must be a Unix socket path');
  const fast = relay();
  const failed = (err: unknown) => notListening(req, err);
  if (fast && req.unix) return fast.unix(req.token, req.unix).catch(failed);
  if (fast && req.handoff) return fast.handoff(req.token, req.handoff, req.port).catch(failed);
  if (fast) return fast.port(req.token, req.port).catch(failed);
  const sink: Sink = { target: null, pending: [], socket: null };
  let conn: Socket;
  try {
    conn = await (req.unix ? dial({ path: req.unix }, sink) : connectLoopback(req.port, sink));
  } catch (err) {
    return failed(err);
  }
  if (!req.unix) conn.setNoDelay(true);
  const data = dialData(req.token);
  track(conn);
  track(data);
  // Port -> host through the big-buffer reads above; host -> port as a plain pipe.
  sink.target = data;
  for (const c of sink.pending) data.write(c);
  sink.pending = [];
  data.pipe(conn);
  // An orderly end travels across; an error tears both down.
  conn.on('end', () => data.end());
  conn.on('error', () => data.destroy());
  data.on('error', () => conn.destroy());
  conn.once('close', (hadError) => (hadError ? data.destroy() : data.end()));
  data.once('close', (hadError) => (hadError ? conn.destroy() : conn.end()));
}

/** Before a checkpoint: no host socket may stay open. */
export function closePortConnections(): void {
  for (const s of open) s.destroy();
  open.clear();
}
