/**
 * DataConnections.dropPorts over real Unix sockets: before a checkpoint, a
 * connection handed to a server in the sandbox is ended and waited for until
 * that server closes its side; other port connections are cut at once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DataConnections } from '../../src/guest/data-connections';

describe('data connections: dropping port connections', () => {
  const dir = mkdtempSync(join(tmpdir(), 'warren-data-'));
  const path = join(dir, 's.sock');
  let server: Server;
  /** The far ends, as a server in the sandbox would hold them. */
  const far: Socket[] = [];

  before(async () => {
    server = createServer({ allowHalfOpen: true }, (s) => far.push(s));
    await new Promise<void>((r) => server.listen(path, r));
  });

  after(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const pair = async (): Promise<[Socket, Socket]> => {
    const n = far.length;
    const near = connect(path);
    await new Promise((r) => near.once('connect', r));
    while (far.length === n) await new Promise((r) => setTimeout(r, 5));
    return [near, far[far.length - 1]!];
  };

  test('waits until the server closes a handed-off connection, cuts the others', async () => {
    const data = new DataConnections();
    const [handed, handedFar] = await pair();
    const [plain] = await pair();
    data.trackPort(handed, true);
    data.trackPort(plain);
    let serverClosed = false;
    // The server sees the end, finishes what it does, then closes.
    handedFar.on('end', () =>
      setTimeout(() => {
        serverClosed = true;
        handedFar.end();
      }, 200),
    );
    handedFar.resume();
    await data.dropPorts(true);
    assert.ok(serverClosed, 'dropPorts returned before the server closed its side');
    assert.ok(plain.destroyed);
    assert.ok(handed.destroyed);
  });

  test('without waiting, every connection is cut at once', async () => {
    const data = new DataConnections();
    const [handed] = await pair();
    data.trackPort(handed, true);
    await data.dropPorts();
    assert.ok(handed.destroyed);
  });
});
