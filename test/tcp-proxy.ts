/**
 * A loopback TCP proxy that can be cut: while cut, every open connection is
 * destroyed and new ones are dropped at once, as a network partition would
 * leave them. For the tests of hosts cut off from the control plane.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  port: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let cut = false;
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (cut) return client.destroy();
    const upstream = createConnection(target);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      cut = true;
      for (const s of open) s.destroy();
    },
    heal() {
      cut = false;
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
