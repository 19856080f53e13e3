/**
 * The native relay (native/relay.c), built here and driven through Relay
 * against a real Unix socket standing in for the host's data socket: file
 * transfers both ways, a port bridge with a half-close, drop, a Unix socket
 * bridge, and a data
 * connection handed by descriptor to a server started with native/handoff.c.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Relay } from '../../src/relay';
import { listenDataHost, type DataHost } from './data-host';

const SOURCE = fileURLToPath(new URL('../../native/relay.c', import.meta.url));
const HANDOFF = fileURLToPath(new URL('../../native/handoff.c', import.meta.url));

/** A server taking connections through the handoff library: answers with what it read and its peer. */
const HANDOFF_SERVER = `
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); print("ready", flush=True)
c, addr = s.accept()
c.sendall(c.recv(100).upper() + f" from {addr[0]}:{addr[1]}".encode()); c.close()
`;

describe('native relay', () => {
  const dir = mkdtempSync(join(tmpdir(), 'warren-relay-'));
  const dataPath = join(dir, 'data.sock');
  let host: DataHost;
  let relay: Relay;
  let child: ChildProcess;

  const connection = (token: string) => host.connection(token);

  before(async () => {
    const binary = join(dir, 'relay');
    execFileSync('gcc', [
      '-static',
      '-O2',
      '-Wall',
      '-Wextra',
      '-Werror',
      '-pthread',
      '-o',
      binary,
      SOURCE,
    ]);
    host = await listenDataHost(dataPath);
    child = spawn(binary, [], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { WARREN_DATA_CHANNEL: dataPath },
    });
    relay = new Relay(child);
  });

  after(() => {
    child.kill();
    host.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const readAll = (s: Socket) =>
    new Promise<Buffer>((resolve) => {
      const parts: Buffer[] = [];
      s.on('data', (d: Buffer) => parts.push(d));
      s.on('end', () => resolve(Buffer.concat(parts)));
    });

  test('sends the first size bytes of a file', async () => {
    const file = join(dir, 'out file');
    const content = Buffer.alloc(3 * 1024 * 1024 + 17, 'ab');
    writeFileSync(file, Buffer.concat([content, Buffer.from('grown later')]));
    const arrived = connection('tok00001');
    relay.send('tok00001', file, content.length);
    assert.deepEqual(await readAll(await arrived), content);
  });

  test('receives a file, sets its mode, and passes the answer back', async () => {
    const file = join(dir, 'in file');
    writeFileSync(file, 'old and longer content');
    const arrived = connection('tok00002');
    const answered = relay.receive('tok00002', file, 0o640, async (err) =>
      err ? `failed ${err.code}\n` : `ok ${statSync(file).size}\n`,
    );
    const s = await arrived;
    const body = Buffer.alloc(2 * 1024 * 1024 + 5, 'x');
    const reply = readAll(s);
    s.end(body);
    await answered;
    assert.equal((await reply).toString(), `ok ${body.length}\n`);
    assert.deepEqual(readFileSync(file), body);
    assert.equal(statSync(file).mode & 0o777, 0o640);
  });

  test('a file that cannot be written is answered with its errno, the body drained', async () => {
    const arrived = connection('tok00003');
    const answered = relay.receive('tok00003', join(dir, 'missing', 'f'), undefined, async (err) =>
      err ? `failed ${err.code}\n` : 'ok\n',
    );
    const s = await arrived;
    const reply = readAll(s);
    s.end(Buffer.alloc(1024 * 1024));
    await answered;
    assert.equal((await reply).toString(), 'failed ENOENT\n');
  });

  test('bridges a port both ways, passes an end, and drop ends every bridge', async () => {
    const app = createServer({ allowHalfOpen: true }, (c) => {
      c.on('data', (d: Buffer) => c.write(d.toString().toUpperCase()));
      c.on('end', () => c.end('bye'));
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    const port = (app.address() as { port: number }).port;
    try {
      const arrived = connection('tok00004');
      await relay.port('tok00004', port);
      const s = await arrived;
      const echoed = new Promise<string>((r) => s.once('data', (d: Buffer) => r(d.toString())));
      s.write('hello');
      assert.equal(await echoed, 'HELLO');
      const rest = readAll(s);
      s.end();
      assert.equal((await rest).toString(), 'bye');

      const second = connection('tok00005');
      await relay.port('tok00005', port);
      const open = await second;
      const closed = new Promise((r) => open.once('close', r));
      open.on('error', () => undefined);
      open.on('end', () => open.end());
      open.resume();
      await relay.drop();
      await closed;

      await assert.rejects(relay.port('tok00006', 1), { code: 'ECONNREFUSED' });
    } finally {
      app.close();
    }
  });

  test('bridges a Unix socket both ways; a path nobody listens on is refused', async () => {
    const socketPath = join(dir, 'app.sock');
    const app = createServer((c) => c.on('data', (d: Buffer) => c.end(`unix got ${d.toString()}`)));
    await new Promise<void>((r) => app.listen(socketPath, r));
    try {
      const arrived = connection('tok00010');
      await relay.unix('tok00010', socketPath);
      const s = await arrived;
      const got = readAll(s);
      s.write('hi');
      assert.equal((await got).toString(), 'unix got hi');
      await assert.rejects(relay.unix('tok00011', join(dir, 'none.sock')), { code: 'ENOENT' });
    } finally {
      app.close();
    }
  });

  test('hands a data connection by descriptor, or bridges the port when nothing takes it', async () => {
    const library = join(dir, 'handoff.so');
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-o', library, HANDOFF, '-ldl']);
    mkdirSync(join(dir, 'handoff'));
    const socketPath = join(dir, 'handoff', 'server.sock');
    const server = spawn('python3', ['-c', HANDOFF_SERVER, socketPath], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, LD_PRELOAD: library, WARREN_HANDOFF_DIR: join(dir, 'handoff') },
    });
    const app = createServer((c) => c.on('data', (d: Buffer) => c.end(`port got ${d.toString()}`)));
    try {
      await new Promise((r) => server.stdout!.once('data', r));
      const arrived = connection('tok00007');
      await relay.handoff('tok00007', socketPath, 1);
      const s = await arrived;
      const answer = readAll(s);
      s.write('hello');
      assert.equal((await answer).toString(), 'HELLO from 127.0.0.1:0');

      await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
      const port = (app.address() as { port: number }).port;
      const fallback = connection('tok00008');
      await relay.handoff('tok00008', join(dir, 'handoff', 'none.sock'), port);
      const f = await fallback;
      const got = readAll(f);
      f.write('hi');
      assert.equal((await got).toString(), 'port got hi');

      await assert.rejects(relay.handoff('tok00009', join(dir, 'handoff', 'none.sock'), 1), {
        code: 'ECONNREFUSED',
      });
    } finally {
      server.kill();
      app.close();
    }
  });
});
