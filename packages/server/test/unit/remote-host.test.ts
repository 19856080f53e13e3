/**
 * The host agent transport (serveHostApi <-> connectRemoteHost) against a
 * small fake HostApi: auth, typed errors, aborts, streaming with
 * backpressure, an agent that is down, TLS, sockets and egress events.
 * test/e2e/host-api-remote.test.ts runs the whole HostApi contract over it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { serveHostApi, type ServedHost } from '../../../host-agent/src/remote/serve';
import { connectRemoteHost, type RemoteHost } from '../../src/hosts/remote-host';
import { WarrenError } from '@warren/protocol';
import { waitFor } from '../../../../test/wait';
import { fakeHost, type FakeRecord } from './remote-fake-host';

const CREDENTIAL = 'c'.repeat(48);
const LOOPBACK = { host: '127.0.0.1', port: 0 };

function record(): FakeRecord {
  return {
    execAborted: false,
    written: null,
    produced: () => 0,
    closed: [],
    ptyInput: '',
    ptyDetached: false,
  };
}

async function rejectsWith(
  p: Promise<unknown>,
  code: string,
  status: number,
): Promise<WarrenError> {
  let caught: unknown;
  await assert.rejects(p, (err) => {
    caught = err;
    return true;
  });
  assert.ok(caught instanceof WarrenError, `a WarrenError, not ${String(caught)}`);
  assert.equal(caught.code, code);
  assert.equal(caught.status, status);
  return caught;
}

describe('host agent transport', () => {
  const rec = record();
  const egress: Array<[string, unknown]> = [];
  let served: ServedHost;
  let remote: RemoteHost;

  before(async () => {
    served = await serveHostApi(fakeHost(rec), { credential: CREDENTIAL, listen: LOOPBACK });
    remote = await connectRemoteHost({
      id: 'host_fake',
      url: served.url,
      credential: CREDENTIAL,
      onEgressEvent: (id, e) => egress.push([id, e]),
    });
  });
  after(async () => {
    await remote?.close();
    await served?.close();
  });

  it('answers plain calls', async () => {
    assert.match(served.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal((await remote.info()).runtime_version, 'fake 1');
    assert.deepEqual(await remote.sandboxes.live(), ['sandbox_a']);
    assert.equal(await remote.sandboxes.usage('sandbox_a'), null);
    assert.equal(await remote.sandboxes.destroy('sandbox_a'), undefined);
  });

  it('refuses a missing or wrong credential with a typed 401', async () => {
    const res = await fetch(`${served.url}/host/info`, { method: 'POST', body: '[]' });
    assert.equal(res.status, 401);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    const wrong = await connectRemoteHost({
      id: 'host_fake',
      url: served.url,
      credential: 'x'.repeat(48),
    });
    try {
      await rejectsWith(wrong.info(), 'UNAUTHORIZED', 401);
      await rejectsWith(wrong.sandboxes.openPort('sandbox_a', 7001), 'UNAUTHORIZED', 401);
      const events = await wrong.processes
        .exec('sandbox_a', { cmd: 'true', args: [] })
        .catch((err: unknown) => err);
      assert.equal((events as WarrenError).code, 'UNAUTHORIZED');
    } finally {
      await wrong.close();
    }
  });

  it("carries the agent's WarrenErrors across: code, status, message, details", async () => {
    const err = await rejectsWith(
      remote.sandboxes.create({ id: 'sandbox_b', template: 'base', env: {} }),
      'INSUFFICIENT_CAPACITY',
      503,
    );
    assert.equal(err.message, 'no room for 300 MiB');
    assert.deepEqual(err.details, { free_mb: 12 });
    const internal = await rejectsWith(remote.sandboxes.reclaim('sandbox_a'), 'INTERNAL', 500);
    assert.equal(internal.message, 'disk on fire');
    await rejectsWith(remote.files.read('sandbox_a', '/nope'), 'FILE_NOT_FOUND', 404);
    await rejectsWith(
      remote.pty.attach('sandbox_a', 'pty_x', { onData() {}, onExit() {}, onEnd() {} }),
      'PTY_NOT_FOUND',
      404,
    );
    await rejectsWith(remote.sandboxes.openPort('sandbox_a', 7999), 'PORT_NOT_LISTENING', 502);
  });

  it('throws exec start errors from the promise; an abort reaches the agent', async () => {
    await rejectsWith(
      remote.processes.exec('sandbox_gone', { cmd: 'true', args: [] }),
      'SANDBOX_NOT_RUNNING',
      409,
    );
    const stop = new AbortController();
    const events = await remote.processes.exec(
      'sandbox_a',
      { cmd: 'sleep', args: ['600'] },
      { signal: stop.signal },
    );
    const seen: string[] = [];
    for await (const e of events) {
      seen.push(e.type);
      if (e.type === 'stdout') stop.abort();
    }
    assert.deepEqual(seen, ['start', 'stdout']);
    await waitFor(() => rec.execAborted, { what: "the agent's exec signal to abort" });
  });

  it('streams a 50 MB file write with backpressure, byte for byte', async () => {
    const chunk = Buffer.alloc(64 * 1024);
    const total = 50 * 1024 * 1024;
    let produced = 0;
    const hash = createHash('sha256');
    rec.produced = () => produced;
    const body = Readable.from(
      (function* () {
        for (let i = 0; produced < total; i++) {
          chunk.fill(i % 251);
          hash.update(chunk);
          produced += chunk.length;
          yield Buffer.from(chunk);
        }
      })(),
    );
    const result = await remote.files.write('sandbox_a', '/big.bin', body);
    assert.deepEqual(result, { path: '/big.bin', size: total });
    assert.equal(rec.written?.bytes, total);
    assert.equal(rec.written?.sha256, hash.digest('hex'));
    // The sender waits for the slow receiver: never more than a few MiB in flight.
    assert.ok(rec.written!.maxLead < 8 * 1024 * 1024, `lead ${rec.written!.maxLead} bytes`);
    // Refused before its body is read: the error comes back, the upload stops.
    const unread = Readable.from(
      (function* () {
        for (let i = 0; i < 800; i++) yield Buffer.alloc(64 * 1024);
      })(),
    );
    await rejectsWith(remote.files.write('sandbox_b', '/x', unread), 'SANDBOX_NOT_RUNNING', 409);
  });

  it('reads a file as a stream with its size', async () => {
    const { size, stream } = await remote.files.read('sandbox_a', '/data');
    assert.equal(size, 5);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), 'hello');
    const broken = await remote.files.read('sandbox_a', '/broken');
    let got = 0;
    await assert.rejects(
      (async () => {
        for await (const c of broken.stream) got += (c as Buffer).length;
      })(),
      (err: WarrenError) => err.code === 'HOST_UNREACHABLE',
    );
    assert.equal(got, 1024);
  });

  it('streams build progress, then the result or the error', async () => {
    const lines: Array<[string, number | undefined]> = [];
    const t = await remote.templates.build({ name: 'web' } as never, (l, s) => lines.push([l, s]));
    assert.deepEqual(t, { name: 'web', state: 'ready' });
    assert.deepEqual(lines, [
      ['step one', 1],
      ['step two', 2],
    ]);
    await rejectsWith(
      remote.templates.build({ name: 'broken' } as never, () => undefined),
      'TEMPLATE_BUILD_FAILED',
      422,
    );
  });

  it('opens port connections and attaches terminals over WebSockets', async () => {
    const conn = await remote.sandboxes.openPort('sandbox_a', 7001);
    conn.write('ping');
    const chunks: Buffer[] = [];
    for await (const c of conn) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), 'PING');

    const heard: string[] = [];
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    const attachment = await remote.pty.attach(
      'sandbox_a',
      'pty_a',
      {
        onStart: (offset) => heard.push(`start ${offset}`),
        onData: (d) => heard.push(`data ${d.toString()}`),
        onExit: (s) => heard.push(`exit ${s.exit_code}`),
        onEnd: () => ended(),
      },
      { since: 7 },
    );
    attachment.write(Buffer.from('exit\n'));
    await end;
    assert.deepEqual(heard, ['start 7', 'data scrollback', 'exit 0']);
    assert.equal(rec.ptyInput, 'exit\n');
  });

  it('delivers egress events to the subscribed control plane', async () => {
    const e = { at: new Date().toISOString(), protocol: 'connect', host: 'example.com', port: 443 };
    served.emitEgress('sandbox_a', e as never);
    await waitFor(() => egress.length === 1, { what: 'the egress event' });
    assert.deepEqual(egress[0], ['sandbox_a', e]);
  });
});

describe('host agent transport: lifecycle, failures and TLS', () => {
  it('close() leaves the agent alone; close({destroy}) is forwarded', async () => {
    const rec = record();
    const served = await serveHostApi(fakeHost(rec), { credential: CREDENTIAL, listen: LOOPBACK });
    try {
      const o = { id: 'host_fake', url: served.url, credential: CREDENTIAL };
      await (await connectRemoteHost(o)).close();
      assert.deepEqual(rec.closed, []);
      await (await connectRemoteHost(o)).close({ destroy: true });
      assert.deepEqual(rec.closed, [{ destroy: true }]);
    } finally {
      await served.close();
    }
  });

  it('an agent that is down is HOST_UNREACHABLE at once; the subscription comes back', async () => {
    const rec = record();
    let served = await serveHostApi(fakeHost(rec), { credential: CREDENTIAL, listen: LOOPBACK });
    const port = Number(new URL(served.url).port);
    const egress: string[] = [];
    const remote = await connectRemoteHost({
      id: 'host_fake',
      url: served.url,
      credential: CREDENTIAL,
      timeoutMs: 2000,
      onEgressEvent: (id) => egress.push(id),
    });
    try {
      await served.close();
      const started = Date.now();
      const err = await rejectsWith(remote.capacity(), 'HOST_UNREACHABLE', 503);
      assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
      assert.match(err.message, /host_fake/);
      await rejectsWith(remote.sandboxes.openPort('sandbox_a', 7001), 'HOST_UNREACHABLE', 503);
      await rejectsWith(
        remote.processes.exec('sandbox_a', { cmd: 'true', args: [] }),
        'HOST_UNREACHABLE',
        503,
      );
      served = await serveHostApi(fakeHost(rec), {
        credential: CREDENTIAL,
        listen: { host: '127.0.0.1', port },
      });
      await waitFor(
        () => {
          served.emitEgress('sandbox_back', { host: 'x' } as never);
          return egress.includes('sandbox_back');
        },
        { what: 'the egress subscription to reconnect', intervalMs: 200 },
      );
      assert.equal((await remote.info()).id, 'host_fake');
    } finally {
      await remote.close();
      await served.close();
    }
  });

  it('serves HTTPS with a self-signed certificate the client trusts as its CA', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'whtls-'));
    const rec = record();
    let served: ServedHost | null = null;
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
          '-days',
          '1',
          '-subj',
          '/CN=warren-host',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
        ],
        { stdio: 'ignore' },
      );
      const cert = readFileSync(join(dir, 'cert.pem'));
      served = await serveHostApi(fakeHost(rec), {
        credential: CREDENTIAL,
        listen: LOOPBACK,
        tls: { key: readFileSync(join(dir, 'key.pem')), cert },
      });
      assert.match(served.url, /^https:\/\//);
      const o = { id: 'host_fake', url: served.url, credential: CREDENTIAL };
      const trusted = await connectRemoteHost({ ...o, ca: cert });
      try {
        assert.equal((await trusted.info()).id, 'host_fake');
        const conn = await trusted.sandboxes.openPort('sandbox_a', 7001);
        conn.write('tls');
        const chunks: Buffer[] = [];
        for await (const c of conn) chunks.push(c as Buffer);
        assert.equal(Buffer.concat(chunks).toString(), 'TLS');
      } finally {
        await trusted.close();
      }
      const untrusted = await connectRemoteHost(o);
      try {
        await rejectsWith(untrusted.info(), 'HOST_UNREACHABLE', 503);
      } finally {
        await untrusted.close();
      }
    } finally {
      await served?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
