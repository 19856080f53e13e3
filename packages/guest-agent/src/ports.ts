/**
 * Port connections for preview URLs: the host asks for a TCP connection to a
 * port on the sandbox's loopback; the agent opens it and pipes it, byte for
 * byte, over a data connection to the host. HTTP, keep-alive, streaming and
 * WebSocket upgrades all pass through unchanged.
 */
import { connect, type Socket } from 'node:net';
import { WarrenError } from '@warren/protocol/errors';
import type { PortConnect } from '@warren/protocol/guest';
import { dialData } from './data';

/** Both ends of every piped connection, so a checkpoint can drop them all. */
const open = new Set<Socket>();

function track(socket: Socket): void {
  open.add(socket);
  socket.once('close', () => open.delete(socket));
}

/** Servers bound to `localhost` may listen on ::1 only: try IPv4 loopback, then IPv6. */
function connectLoopback(port: number): Promise<Socket> {
  const attempt = (host: string) =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect({ host, port });
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

/** Opens the port; resolves once it is connected and the data connection is dialed. */
export async function connectPort(req: PortConnect): Promise<void> {
  if (!Number.isInteger(req.port) || req.port < 1 || req.port > 65535)
    throw new WarrenError('INVALID_REQUEST', 'port must be an integer from 1 to 65535');
  let tcp: Socket;
  try {
    tcp = await connectLoopback(req.port);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new WarrenError(
      'PORT_NOT_LISTENING',
      `nothing accepts connections on port ${req.port} in the sandbox (${code})`,
      { port: req.port },
    );
  }
  tcp.setNoDelay(true);
  const data = dialData(req.token);
  track(tcp);
  track(data);
  splice(tcp, data);
}

/** Pipes two sockets both ways; an orderly end travels across, an error tears both down. */
export function splice(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const link = (from: Socket, to: Socket) => {
    from.on('error', () => to.destroy());
    from.once('close', (hadError) => (hadError ? to.destroy() : to.end()));
  };
  link(a, b);
  link(b, a);
}

/** Before a checkpoint: no host socket may stay open. */
export function closePortConnections(): void {
  for (const s of open) s.destroy();
  open.clear();
}
