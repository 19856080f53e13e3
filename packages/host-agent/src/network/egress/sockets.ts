/** Socket plumbing of the egress proxy: a sandbox's open sockets, splicing two sockets, exact reads. */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SandboxEgress } from './types';

/** Counts a socket as the sandbox's until it closes, so detaching the sandbox cuts it. */
export function track(sbx: SandboxEgress, s: Duplex): void {
  sbx.sockets.add(s);
  s.once('close', () => sbx.sockets.delete(s));
}

/**
 * Pipes two sockets into each other. An end on one side ends the other
 * after what is buffered is written (nothing is cut off); an error or a
 * reset tears both down. `done` runs once, when both are closed.
 */
export function splice(sbx: SandboxEgress, a: Duplex, b: Socket, done: () => void): void {
  track(sbx, b);
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

/** Reads exactly n bytes from a paused socket. */
export function readBytes(socket: Duplex, n: number): Promise<Buffer> {
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
