/**
 * The guest endpoint of runtimes that share a host directory with the
 * sandbox: Unix sockets in the channel directory, which the sandbox sees at
 * GUEST_CHANNEL_DIR. The guest agent dials `agent.sock` for its control
 * connection and `data.sock` for each transfer.
 */
import { mkdir, unlink } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { GUEST_CHANNEL_SOCKET, GUEST_DATA_SOCKET } from '@warren/protocol/guest';
import type { GuestEndpoint } from './driver';

export class UnixEndpoint implements GuestEndpoint {
  private servers: Server[] = [];

  constructor(private readonly dir: string) {}

  get controlPath(): string {
    return join(this.dir, GUEST_CHANNEL_SOCKET);
  }

  get dataPath(): string {
    return join(this.dir, GUEST_DATA_SOCKET);
  }

  async listen(handlers: {
    control(socket: Socket): void;
    data(socket: Socket): void;
  }): Promise<void> {
    await this.close();
    await mkdir(this.dir, { recursive: true });
    this.servers = [
      await listenOn(this.controlPath, handlers.control),
      await listenOn(this.dataPath, handlers.data),
    ];
  }

  async close(): Promise<void> {
    // close() stops accepting at once; its callback would wait for live connections too.
    for (const server of this.servers) server.close();
    this.servers = [];
    await unlink(this.controlPath).catch(() => undefined);
    await unlink(this.dataPath).catch(() => undefined);
  }
}

async function listenOn(path: string, onConnection: (socket: Socket) => void): Promise<Server> {
  await unlink(path).catch(() => undefined);
  const server = createServer(onConnection);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  return server;
}
