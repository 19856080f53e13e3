/** Data connections: raw sockets to the host for bulk file transfers (see GUEST_DATA_SOCKET). */
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { GUEST_CHANNEL_DIR, GUEST_DATA_SOCKET } from '@warren/protocol/guest';

export const DATA_SOCKET =
  process.env.WARREN_DATA_CHANNEL ?? join(GUEST_CHANNEL_DIR, GUEST_DATA_SOCKET);

/**
 * Dials the host's data socket and identifies the transfer. Half-open, so an
 * upload's result can still be written back after the host ends its side.
 */
export function dialData(token: string): Socket {
  const socket = connect({ path: DATA_SOCKET, allowHalfOpen: true });
  socket.write(token + '\n');
  socket.on('error', () => undefined);
  return socket;
}
