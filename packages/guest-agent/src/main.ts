/**
 * Warren guest agent: runs inside every sandbox as its first process.
 *
 * It dials the host agent's Unix socket (bind-mounted at /run/warren) and
 * serves HTTP/2 on that connection. Before a checkpoint it drops the
 * connection, because gVisor cannot save an open host socket; the dial loop
 * is part of the saved state, so every restored copy dials its own host
 * socket as soon as it runs again.
 */
import { existsSync } from 'node:fs';
import { createServer, type Http2Session } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import {
  CHANNEL_SETTINGS,
  CHANNEL_WINDOW,
  GUEST_CHANNEL_DIR,
  GUEST_CHANNEL_SOCKET,
} from '@warren/protocol/guest';
import { closePortConnections } from './ports';
import { dropEgress, egressEnv } from './egress';
import { CodeInterpreter } from './code';
import { ProcessTable } from './processes';
import { PtyTable } from './pty';
import { handle, type GuestState } from './routes';
import { startRelay } from './relay';

const SOCKET = process.env.WARREN_CHANNEL ?? join(GUEST_CHANNEL_DIR, GUEST_CHANNEL_SOCKET);
/** Dial quickly for a while after a disconnect (a restore is being waited for), then back off. */
const FAST_DIAL_MS = 2;
const FAST_DIAL_ATTEMPTS = 1500;
const SLOW_DIAL_MS = 50;

const baseEnv: NodeJS.ProcessEnv = { ...process.env };
delete baseEnv.WARREN_CHANNEL;
delete baseEnv.WARREN_DATA_CHANNEL;

let socket: Socket | null = null;
let session: Http2Session | null = null;
let attempts = 0;

const processEnv = (): NodeJS.ProcessEnv => ({
  ...baseEnv,
  ...state.defaults?.env,
  ...egressEnv(),
  ...state.env,
});
const processes = new ProcessTable(processEnv);

const state: GuestState = {
  sandboxId: null,
  env: {},
  connections: 0,
  startedAt: Date.now(),
  settling: Promise.resolve(),
  processes,
  pty: new PtyTable(processEnv, processes.helper),
  code: new CodeInterpreter(() => ({
    env: processEnv,
    cwd: state.defaults?.cwd,
    user: state.defaults?.user,
  })),
  prepareCheckpoint: () => {
    attempts = 0;
    closePortConnections();
    dropEgress();
    session?.destroy();
    socket?.destroy();
  },
};

// Large windows and frames: file transfers cross this one connection, and every
// read or write of it is a system call through the gVisor kernel.
const server = createServer({ settings: CHANNEL_SETTINGS });
server.on('session', (s) => {
  session = s;
  s.on('error', () => {});
  s.setLocalWindowSize(CHANNEL_WINDOW);
});
server.on('stream', (stream, headers) => handle(state, stream, headers));

function scheduleDial(): void {
  attempts += 1;
  setTimeout(dial, attempts < FAST_DIAL_ATTEMPTS ? FAST_DIAL_MS : SLOW_DIAL_MS);
}

function dial(): void {
  // Checking for the socket file first avoids creating a socket per attempt while nobody listens.
  if (!existsSync(SOCKET)) return scheduleDial();
  const s = connect(SOCKET);
  s.once('connect', () => {
    attempts = 0;
    socket = s;
    state.connections += 1;
    server.emit('connection', s);
  });
  s.once('error', () => {});
  s.once('close', () => {
    if (socket === s) {
      socket = null;
      session = null;
    }
    scheduleDial();
  });
}

startRelay();
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
dial();
