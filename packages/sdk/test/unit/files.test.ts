import assert from 'node:assert/strict';
import { chmod, mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { Files, HttpClient, WarrenConnectionError } from '../../src/index';
import type { WriteResult } from '@warren/protocol';
import { fileInfo, sendError, sendJson, startFakeApi, type FakeApi } from '../helpers/fake-api';

const MB = 1024 * 1024;

/**
 * Runs `fn` while sampling the memory held in ArrayBuffers. A transfer that
 * buffered the whole 100 MiB would push the peak past 100 MiB.
 */
async function peakBuffersDuring<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const start = process.memoryUsage().arrayBuffers;
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
  }, 5);
  try {
    return [await fn(), (peak - start) / MB];
  } finally {
    clearInterval(timer);
  }
}
let api: FakeApi;
let files: Files;
let dir: string;
const base = '/v1/sandboxes/sbx_1/files';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'warren-files-'));
  api = await startFakeApi(async (req, res) => {
    const path = req.query.get('path') ?? '';
    if (req.method === 'PUT')
      return sendJson(res, 200, { path, size: req.size } satisfies WriteResult);
    if (req.method === 'GET' && req.path === base) {
      if (path === '/big') {
        // 100 MiB in 1 MiB writes, honouring backpressure.
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(MB, 7);
        for (let i = 0; i < 100; i++) {
          if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
        }
        return res.end();
      }
      if (path === '/broken') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        // Cut once the first bytes are on their way.
        return res.write(Buffer.alloc(1000), () => res.destroy());
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return res.end('héllo');
    }
    if (req.path === `${base}/stat`) {
      if (path === '/nope') return sendError(res, 'FILE_NOT_FOUND', 'no such file', 404);
      return sendJson(res, 200, fileInfo(path, { type: 'file' }));
    }
    if (req.method === 'DELETE') {
      res.writeHead(204);
      return res.end();
    }
    sendError(res, 'NOT_FOUND', req.path, 404);
  });
  files = new Files(new HttpClient({ apiUrl: api.url, apiKey: 'k' }), 'sbx_1');
});
after(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

test('write sends raw bytes as octet-stream, with the mode in octal', async () => {
  assert.deepEqual(await files.write('/a.txt', 'héllo', { mode: 0o755 }), {
    path: '/a.txt',
    size: 6,
  });
  const req = api.requests.at(-1)!;
  assert.equal(req.headers['content-type'], 'application/octet-stream');
  assert.equal(req.query.get('mode'), '755');
  assert.equal(req.body.toString(), 'héllo');

  await files.write('/b', Readable.from([Buffer.from('ab'), Buffer.from('cd')]));
  assert.equal(api.requests.at(-1)!.body.toString(), 'abcd');
  assert.equal(api.requests.at(-1)!.query.has('mode'), false);
});

test('read decodes text; readBytes returns the bytes', async () => {
  assert.equal(await files.read('/a.txt'), 'héllo');
  assert.deepEqual(await files.readBytes('/a.txt'), new Uint8Array(Buffer.from('héllo')));
});

test('uploadFile streams 100 MiB chunked and keeps the permission bits', async () => {
  const local = join(dir, 'big.bin');
  const fh = await open(local, 'w');
  await fh.truncate(100 * MB);
  await fh.close();
  await chmod(local, 0o640);

  const [result, peakMb] = await peakBuffersDuring(() => files.uploadFile(local, '/big.bin'));
  assert.deepEqual(result, { path: '/big.bin', size: 100 * MB });
  assert.ok(peakMb < 80, `upload held ${peakMb.toFixed(0)} MiB in memory`);
  const req = api.requests.at(-1)!;
  assert.equal(req.headers['transfer-encoding'], 'chunked');
  assert.equal(req.headers['content-length'], undefined);
  assert.ok(req.chunks > 10, `arrived in ${req.chunks} chunks`);
  assert.equal(req.query.get('mode'), '640');
});

test('uploadFile reports a missing local file as such', async () => {
  await assert.rejects(files.uploadFile(join(dir, 'absent'), '/x'), { code: 'ENOENT' });
});

test('downloadFile streams 100 MiB to disk', async () => {
  const local = join(dir, 'down.bin');
  const [result, peakMb] = await peakBuffersDuring(() => files.downloadFile('/big', local));
  assert.deepEqual(result, { path: local, size: 100 * MB });
  assert.ok(peakMb < 80, `download held ${peakMb.toFixed(0)} MiB in memory`);
  assert.equal((await stat(local)).size, 100 * MB);
});

test('a download cut mid-way is a connection error and leaves no partial file', async () => {
  const local = join(dir, 'broken.bin');
  await assert.rejects(files.downloadFile('/broken', local), WarrenConnectionError);
  await assert.rejects(stat(local), { code: 'ENOENT' });
});

test('exists maps FILE_NOT_FOUND to false; remove passes recursive', async () => {
  assert.equal(await files.exists('/a.txt'), true);
  assert.equal(await files.exists('/nope'), false);
  await files.remove('/tree', { recursive: true });
  assert.equal(api.requests.at(-1)!.query.get('recursive'), 'true');
});
