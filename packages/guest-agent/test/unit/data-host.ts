/**
 * The host's data socket for unit tests: a Unix socket server that sorts each
 * data connection by the 8-character token (and newline) it starts with.
 */
import { createServer, type Server, type Socket } from 'node:net';

export interface DataHost {
  server: Server;
  /** The next data connection that starts with `token`, after its first line. */
  connection(token: string): Promise<Socket>;
}

export async function listenDataHost(path: string): Promise<DataHost> {
  const arrivals = new Map<string, (s: Socket) => void>();
  const server = createServer({ allowHalfOpen: true }, (s) => {
    const onReadable = () => {
      const head = s.read(9) as Buffer | null;
      if (!head) return;
      s.off('readable', onReadable);
      arrivals.get(head.subarray(0, 8).toString())?.(s);
    };
    s.on('readable', onReadable);
  });
  await new Promise<void>((r) => server.listen(path, r));
  return {
    server,
    connection: (token) => new Promise<Socket>((resolve) => arrivals.set(token, resolve)),
  };
}
