/**
 * The host-side egress proxy on loopback, without a sandbox: what it does
 * with malformed and broken-off connections (they end; the process goes on),
 * and the HTTP, CONNECT and SOCKS5 paths end to end against a local server
 * (127.0.0.1 unblocked by operator configuration, as WARREN_EGRESS_UNBLOCK does).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttp, type Server } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AddressGuard, parseCidrList } from '../../src/network/addresses';
import { EgressCa } from '../../src/network/ca';
import { EgressProxy, type EgressRecord } from '../../src/network/egress-proxy';
import { BUILTIN_PRESETS } from '../../src/network/presets';
import { Resolver } from '../../src/network/resolver';

describe('egress proxy (loopback, no sandbox)', () => {
  let dir: string;
  let proxy: EgressProxy;
  let front: Server | ReturnType<typeof createServer>;
  let upstream: Server;
  let upstreamPort: number;
  let frontPort: number;
  const events: EgressRecord[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'wegress-'));
    upstream = createHttp((req, res) => {
      if (req.url === '/slow') {
        res.writeHead(200);
        res.write('x'.repeat(1000));
        return; // never ends: the client breaks off
      }
      res.end(JSON.stringify({ url: req.url, auth: req.headers.authorization ?? null }));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upstreamPort = (upstream.address() as AddressInfo).port;
    proxy = new EgressProxy({
      ca: await EgressCa.open(join(dir, 'ca')),
      resolver: new Resolver(),
      guard: new AddressGuard({ unblock: parseCidrList('127.0.0.1/32') }),
      presets: BUILTIN_PRESETS,
      onEvent: (_id, e) => events.push(e),
    });
    proxy.configure('sbx_test', { mode: 'restricted', allow: [`127.0.0.1:${upstreamPort}`] }, [
      { host: 'api.example.test', header: 'Authorization', value: 'Bearer s' },
    ]);
    front = createServer((s) => proxy.handle('sbx_test', s));
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    frontPort = (front.address() as AddressInfo).port;
  });
  after(() => {
    proxy.detach('sbx_test');
    front.close();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const talk = (data: Buffer | string, closeAfterMs?: number) =>
    new Promise<string>((resolve) => {
      const s: Socket = connect(frontPort, '127.0.0.1', () => s.write(data));
      let out = '';
      s.on('data', (d) => (out += d.toString('latin1')));
      s.on('error', () => undefined);
      s.on('close', () => resolve(out));
      if (closeAfterMs !== undefined) setTimeout(() => s.destroy(), closeAfterMs);
      else setTimeout(() => s.end(), 2000);
    });

  it('forwards an allowed absolute-URI request and refuses others with 403', async () => {
    const ok = await talk(
      `GET http://127.0.0.1:${upstreamPort}/hi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    assert.match(ok, /^HTTP\/1\.1 200/);
    assert.match(ok, /"url":"\/hi"/);
    const denied = await talk(
      'GET http://127.0.0.2:80/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    assert.match(denied, /^HTTP\/1\.1 403/);
    const e = events.find((x) => x.host === '127.0.0.1' && x.decision === 'allowed')!;
    assert.ok(e.bytes_in > 0);
  });

  it('tunnels CONNECT and SOCKS5 to allowed destinations only', async () => {
    const tunnel = await talk(
      `CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\nHost: x\r\n\r\nGET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    assert.match(tunnel, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200/);
    const port = Buffer.alloc(2);
    port.writeUInt16BE(upstreamPort);
    const socks = await talk(
      Buffer.concat([
        Buffer.from([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1]),
        port,
        Buffer.from('GET /s HTTP/1.0\r\n\r\n'),
      ]),
    );
    assert.ok(socks.startsWith('\x05\x00\x05\x00'), JSON.stringify(socks.slice(0, 12)));
    assert.match(socks, /"url":"\/s"/);
    const refused = await talk(Buffer.from([5, 1, 0, 5, 1, 0, 1, 169, 254, 169, 254, 0, 80]));
    assert.equal(refused.charCodeAt(3), 2); // connection not allowed by ruleset
    const udp = await talk(Buffer.from([5, 1, 0, 5, 3, 0, 1, 127, 0, 0, 1, 0, 53]));
    assert.equal(udp.charCodeAt(3), 7); // UDP ASSOCIATE: command not supported
  });

  it('ends malformed and broken-off connections without taking the process down', async () => {
    for (const junk of [
      'GARBAGE\r\n\r\n',
      'GET /relative HTTP/1.1\r\nHost: x\r\n\r\n',
      'CONNECT nonsense HTTP/1.1\r\n\r\n',
      'CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n',
      Buffer.from([5, 1]),
      Buffer.from([5, 1, 0, 5, 1, 0, 9]),
      Buffer.from([4, 1, 0, 80, 127, 0, 0, 1, 0]),
    ])
      await talk(junk, 300);
    // A client that goes away in the middle of a response.
    await talk(`GET http://127.0.0.1:${upstreamPort}/slow HTTP/1.1\r\nHost: x\r\n\r\n`, 300);
    // Still serving.
    const ok = await talk(
      `GET http://127.0.0.1:${upstreamPort}/after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    assert.match(ok, /"url":"\/after"/);
  });

  it('cuts every connection of a sandbox when it is detached', async () => {
    proxy.configure('sbx_other', { mode: 'open', allow: ['127.0.0.0/8'] }, []);
    const other = createServer((s) => proxy.handle('sbx_other', s));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const s = connect((other.address() as AddressInfo).port, '127.0.0.1');
    s.on('error', () => undefined);
    const closed = new Promise((r) => s.on('close', r));
    s.write(`GET http://127.0.0.1:${upstreamPort}/slow HTTP/1.1\r\nHost: x\r\n\r\n`);
    await new Promise((r) => s.once('data', r));
    proxy.detach('sbx_other');
    await closed;
    other.close();
  });
});
