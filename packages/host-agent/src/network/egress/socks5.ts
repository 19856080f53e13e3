/**
 * SOCKS5, read here: only CONNECT with no authentication is needed (the
 * channel already says which sandbox it is), a few dozen lines; the npm SOCKS
 * server packages are unmaintained and want to own a listening socket.
 */
import type { Socket } from 'node:net';
import { logDenied, logEgress } from './log';
import { readBytes, splice } from './sockets';
import type { EgressOptions, SandboxEgress } from './types';
import { connectLogged, decide } from './upstream';

/** SOCKS5, CONNECT only, no authentication (RFC 1928). */
export async function socks5(
  options: EgressOptions,
  sbx: SandboxEgress,
  socket: Socket,
): Promise<void> {
  const started = Date.now();
  let host = '';
  let port = 0;
  try {
    const [, n = 0] = await readBytes(socket, 2);
    const methods = await readBytes(socket, n);
    if (!methods.includes(0)) return void socket.end(Buffer.from([5, 0xff]));
    socket.write(Buffer.from([5, 0]));
    const [ver, cmd, , atyp] = await readBytes(socket, 4);
    if (atyp === 1) host = [...(await readBytes(socket, 4))].join('.');
    else if (atyp === 4) {
      const b = await readBytes(socket, 16);
      host = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2).toString(16)).join(':');
    } else if (atyp === 3) {
      const [len = 0] = await readBytes(socket, 1);
      host = (await readBytes(socket, len)).toString('latin1');
    } else return void socket.end(Buffer.from([5, 8, 0, 1, 0, 0, 0, 0, 0, 0]));
    port = (await readBytes(socket, 2)).readUInt16BE(0);
    if (ver !== 5 || cmd !== 1) {
      // BIND and UDP ASSOCIATE are refused: no UDP leaves a sandbox.
      logDenied(
        options,
        sbx,
        { protocol: 'socks5', host, port },
        `SOCKS command ${cmd} not supported`,
        started,
      );
      return void socket.end(Buffer.from([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]));
    }
  } catch {
    return void socket.destroy();
  }
  const { decision, addresses, host: name } = await decide(options, sbx, host, port);
  const record = { protocol: 'socks5' as const, host: name, port };
  if (!decision.allowed) {
    logDenied(options, sbx, record, decision.reason, started);
    return void socket.end(Buffer.from([5, 2, 0, 1, 0, 0, 0, 0, 0, 0]));
  }
  const upstream = await connectLogged(options, sbx, record, addresses, port, started);
  if (!upstream) {
    return void socket.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]));
  }
  socket.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
  splice(sbx, socket, upstream, () =>
    logEgress(
      options,
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
