/** Stream helpers of a front door connection: the TLS handshake and the splice. */
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { WireError } from './wire';

/** How long a closing connection waits for its last bytes to be taken before it is cut. */
export const LINGER_MS = 10_000;

/** Resolves once the TLS handshake is done; rejects if the socket fails or closes first. */
export function secured(tls: TLSSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    const gone = (): void => {
      tls.off('secure', ok);
      reject(new WireError('08006', 'connection closed during the TLS handshake'));
    };
    const ok = (): void => {
      tls.off('close', gone);
      tls.off('error', gone);
      resolve();
    };
    tls.once('secure', ok);
    tls.once('close', gone);
    tls.once('error', gone);
  });
}

/** After an SSL or GSSENC request the client must wait for the answer (CVE-2021-23214). */
export function noPipelining(rest: Buffer): void {
  if (rest.length > 0)
    throw new WireError('08P01', 'received unencrypted data after an encryption request');
}

/**
 * Pipes `a` and `b` into each other with backpressure. When one side ends,
 * the other is ended once what was read is written, and `done` is called
 * when that is flushed (or after LINGER_MS if it is not taken). Errors and
 * abrupt closes are the caller's: they tear both down at once.
 */
export function splice(a: Duplex, b: Duplex, done: () => void): void {
  a.pipe(b, { end: false });
  b.pipe(a, { end: false });
  let ending = false;
  const ended = (to: Duplex) => (): void => {
    to.end();
    if (ending) return;
    ending = true;
    to.once('finish', done);
    setTimeout(done, LINGER_MS).unref();
  };
  a.once('end', ended(b));
  b.once('end', ended(a));
}
