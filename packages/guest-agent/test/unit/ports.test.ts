/**
 * Port connections without the native relay (the agent's own streams): a
 * Unix socket bridged to a data connection, and the requests refused before
 * anything is dialed. A Unix socket stands in for the host's data socket.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { listenDataHost, type DataHost } from './data-host';

const dir = mkdtempSync(join(tmpdir(), 'warren-ports-'));
process.env.WARREN_DATA_CHANNEL = join(dir, 'data.sock');
// Read by data.ts when it loads: imported after the variable is set.
const { closePortConnections, connectPort } = await import('../../src/ports');

describe('port connections (agent streams)', () => {
  let host: DataHost;

  before(async () => {
    host = await listenDataHost(process.env.WARREN_DATA_CHANNEL!);
  });

  after(() => {
    closePortConnections();
    host.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('bridges a Unix socket to a data connection', async () => {
    const path = join(dir, 'app.sock');
    const app = createServer((c) => c.on('data', (d: Buffer) => c.end(`unix got ${d.toString()}`)));
    await new Promise<void>((r) => app.listen(path, r));
    try {
      const arrived = host.connection('tok00001');
      await connectPort({ port: 0, token: 'tok00001', unix: path });
      const s = await arrived;
      const parts: Buffer[] = [];
      const done = new Promise((r) => s.on('end', r));
      s.on('data', (d: Buffer) => parts.push(d));
      s.write('hi');
      await done;
      s.end();
      assert.equal(Buffer.concat(parts).toString(), 'unix got hi');
    } finally {
      app.close();
    }
  });

  test('refuses bad paths and a socket nobody listens on', async () => {
    await assert.rejects(connectPort({ port: 0, token: 'tok00002', unix: 'relative.sock' }), {
      code: 'INVALID_REQUEST',
    });
    await assert.rejects(connectPort({ port: 0, token: 'tok00002', unix: `/${'x'.repeat(107)}` }), {
      code: 'INVALID_REQUEST',
    });
    await assert.rejects(connectPort({ port: 0, token: 'tok00002' }), {
      code: 'INVALID_REQUEST',
    });
    await assert.rejects(
      connectPort({ port: 0, token: 'tok00002', unix: join(dir, 'none.sock') }),
      { code: 'PORT_NOT_LISTENING' },
    );
  });
});
