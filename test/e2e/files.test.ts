import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';

async function code(res: Response): Promise<[number, string]> {
  return [res.status, ((await res.json()) as { error: { code: string } }).error.code];
}

describe('files (real gVisor, always through the guest agent)', () => {
  let p: TestPlatform;
  let id: string;
  const f = (path: string) => `/v1/sandboxes/${id}/files?path=${encodeURIComponent(path)}`;
  before(async () => {
    p = await startTestPlatform();
    id = await createSandbox(p);
  });
  after(async () => {
    await p?.stop();
  });

  it('write creates parents; read, stat and list see it; exec sees it too', async () => {
    const put = await p.api(f('/work/deep/dir/hello.txt'), {
      method: 'PUT',
      body: 'hello\n',
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(put.status, 200);
    assert.deepEqual(await put.json(), { path: '/work/deep/dir/hello.txt', size: 6 });
    assert.equal(await (await p.api(f('/work/deep/dir/hello.txt'))).text(), 'hello\n');
    const st = await p.json(`/v1/sandboxes/${id}/files/stat?path=/work/deep/dir/hello.txt`);
    assert.deepEqual([st.type, st.size, st.name], ['file', 6, 'hello.txt']);
    const ls = await p.json(`/v1/sandboxes/${id}/files/list?path=/work/deep/dir`);
    assert.deepEqual(
      ls.items.map((i: { name: string }) => i.name),
      ['hello.txt'],
    );
    assert.equal(
      (await exec(p, id, { cmd: 'cat', args: ['/work/deep/dir/hello.txt'] })).stdout,
      'hello\n',
    );
  });

  it('mkdir, rename, remove, with mode', async () => {
    const mk = await p.json(`/v1/sandboxes/${id}/files/mkdir`, {
      method: 'POST',
      json: { path: '/data/a/b' },
    });
    assert.equal(mk.type, 'dir');
    const dup = await p.api(`/v1/sandboxes/${id}/files/mkdir`, {
      method: 'POST',
      json: { path: '/data/a/b', parents: false },
    });
    assert.deepEqual(await code(dup), [409, 'FILE_EXISTS']);
    await p.api(`/v1/sandboxes/${id}/files?path=/data/a/b/x.sh&mode=755`, {
      method: 'PUT',
      body: '#!/bin/sh\necho run\n',
    });
    assert.equal((await exec(p, id, { cmd: '/data/a/b/x.sh' })).stdout, 'run\n');
    const mv = await p.json(`/v1/sandboxes/${id}/files/rename`, {
      method: 'POST',
      json: { from: '/data/a/b/x.sh', to: '/data/moved/y.sh' },
    });
    assert.deepEqual([mv.path, mv.mode], ['/data/moved/y.sh', '755']);
    const notEmpty = await p.api(`/v1/sandboxes/${id}/files?path=/data/moved`, {
      method: 'DELETE',
    });
    assert.deepEqual(await code(notEmpty), [409, 'DIRECTORY_NOT_EMPTY']);
    const rm = await p.api(`/v1/sandboxes/${id}/files?path=/data&recursive=true`, {
      method: 'DELETE',
    });
    assert.equal(rm.status, 204);
    assert.deepEqual(await code(await p.api(`/v1/sandboxes/${id}/files/stat?path=/data`)), [
      404,
      'FILE_NOT_FOUND',
    ]);
  });

  it('bad paths are typed errors', async () => {
    assert.deepEqual(await code(await p.api(f('/nope/missing'))), [404, 'FILE_NOT_FOUND']);
    assert.deepEqual(await code(await p.api(f('/etc'))), [400, 'IS_A_DIRECTORY']);
    assert.deepEqual(await code(await p.api(f('relative/path'))), [400, 'INVALID_PATH']);
    assert.deepEqual(await code(await p.api(`/v1/sandboxes/${id}/files/list?path=/etc/hostname`)), [
      400,
      'NOT_A_DIRECTORY',
    ]);
    assert.deepEqual(await code(await p.api(`/v1/sandboxes/${id}/files`)), [
      400,
      'INVALID_REQUEST',
    ]);
    // The path is the sandbox's own view: the host's files are not reachable through it.
    assert.deepEqual(await code(await p.api(f(`${p.home}/admin-token`))), [404, 'FILE_NOT_FOUND']);
  });

  it('an upload the sandbox refuses is a typed error, and the next upload works', async () => {
    const put = (path: string) => p.api(f(path), { method: 'PUT', body: 'x'.repeat(1000) });
    // Refused when the guest opens the file, before any byte is sent.
    assert.deepEqual(await code(await put('/proc/warren-upload')), [403, 'PERMISSION_DENIED']);
    assert.deepEqual(await code(await put('/etc')), [400, 'IS_A_DIRECTORY']);
    assert.deepEqual(await code(await put('/etc/hostname/below')), [400, 'NOT_A_DIRECTORY']);
    assert.equal((await put('/root/after-refusals.txt')).status, 200);
  });

  it('binary-safe round trip', async () => {
    const bytes = randomBytes(256 * 1024);
    await p.api(f('/tmp/bin.dat'), {
      method: 'PUT',
      body: bytes,
      headers: { 'content-type': 'application/octet-stream' },
    });
    const back = Buffer.from(await (await p.api(f('/tmp/bin.dat'))).arrayBuffer());
    assert.ok(back.equals(bytes));
    const sum = await exec(p, id, { cmd: 'sha256sum', args: ['/tmp/bin.dat'] });
    assert.equal(sum.stdout.split(' ')[0], createHash('sha256').update(bytes).digest('hex'));
  });

  it('100 MB upload and download are streamed, not buffered', async () => {
    const size = 100 * 1024 * 1024;
    const chunk = randomBytes(1024 * 1024);
    const upHash = createHash('sha256');
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < size / chunk.length; i++) {
          const c = Buffer.from(chunk);
          c.writeUInt32LE(i, 0);
          upHash.update(c);
          yield c;
        }
      })(),
    );
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    try {
      const put = await p.api(f('/tmp/big.bin'), {
        method: 'PUT',
        body: Readable.toWeb(source) as ReadableStream,
        headers: { 'content-type': 'application/octet-stream' },
        duplex: 'half',
        redirect: 'error',
      } as RequestInit);
      assert.deepEqual(await put.json(), { path: '/tmp/big.bin', size });
      const res = await p.api(f('/tmp/big.bin'));
      assert.equal(res.headers.get('content-length'), String(size));
      const downHash = createHash('sha256');
      let got = 0;
      for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) {
        downHash.update(c);
        got += c.length;
      }
      assert.equal(got, size);
      assert.equal(downHash.digest('hex'), upHash.digest('hex'));
    } finally {
      clearInterval(sampler);
    }
    // Server, host agent and client share this process: none of them held the file.
    assert.ok(
      peak - rssBefore < 80 * 1024 * 1024,
      `resident memory grew by ${Math.round((peak - rssBefore) / 1048576)} MiB`,
    );
  });
});
