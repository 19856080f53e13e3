import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import type { FileInfo, HostFileApi } from '@warren/protocol';
import { hostArchiveApi } from '../../src/archive';
import { LocalObjectStore } from '../../src/archive/local';

/** Files of one pretend sandbox, in memory: enough for the archive's logic. */
function memoryFiles(files: Map<string, string>): HostFileApi {
  const info = (path: string): FileInfo => ({
    name: path.slice(path.lastIndexOf('/') + 1),
    path,
    type: 'file',
    size: Buffer.byteLength(files.get(path) ?? ''),
    mode: '644',
    mtime: new Date(0).toISOString(),
  });
  return {
    read: async (_id, path) => ({
      size: Buffer.byteLength(files.get(path)!),
      stream: Readable.from([Buffer.from(files.get(path)!)]),
    }),
    async write(_id, path, body) {
      const chunks: Buffer[] = [];
      for await (const c of body) chunks.push(Buffer.from(c as Buffer));
      files.set(path, Buffer.concat(chunks).toString());
      return { path, size: Buffer.concat(chunks).length };
    },
    list: async (_id, dir) => ({
      items: [...files.keys()].filter((p) => p.startsWith(`${dir}/`)).map(info),
    }),
    stat: async (_id, path) => info(path),
    mkdir: async (_id, req) => info(req.path),
    rename: async (_id, req) => info(req.to),
    // Archives never watch.
    watch: () => Promise.reject(new Error('the archive does not watch files')),
    remove: async (_id, path) => void files.delete(path),
  };
}

describe('archive', () => {
  const dir = mkdtempSync('/tmp/wt-archive-');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const store = new LocalObjectStore(dir);

  it('moves finished outbox files into the archive and leaves files being written', async () => {
    const files = new Map([
      ['/out/000000010000000000000001', 'one'],
      ['/out/000000010000000000000002.tmp', 'half'],
    ]);
    const archive = hostArchiveApi(store, memoryFiles(files));
    const moved = await archive.collect('sbx', '/out', 'databases/db_a/wal/');
    assert.deepEqual(moved, [{ key: 'databases/db_a/wal/000000010000000000000001', size: 3 }]);
    assert.deepEqual([...files.keys()], ['/out/000000010000000000000002.tmp']);
    assert.deepEqual(await archive.list('databases/db_a/'), moved);
    await archive.download('databases/db_a/wal/000000010000000000000001', 'sbx', '/in/x');
    assert.equal(files.get('/in/x'), 'one');
  });

  it('refuses to archive under a fence that moved on, and moves nothing', async () => {
    const files = new Map([['/out/000000010000000000000003', 'three']]);
    const archive = hostArchiveApi(store, memoryFiles(files));
    await archive.put('databases/db_a/epoch', '2');
    await assert.rejects(
      archive.collect('sbx', '/out', 'databases/db_a/wal/', {
        key: 'databases/db_a/epoch',
        value: '1',
      }),
      (err: Error & { code?: string }) => err.code === 'DATABASE_FENCED',
    );
    assert.ok(files.has('/out/000000010000000000000003'));
    await archive.collect('sbx', '/out', 'databases/db_a/wal/', {
      key: 'databases/db_a/epoch',
      value: '2',
    });
    assert.equal(files.size, 0);
  });

  it('refuses keys that could leave the archive, and removes by prefix', async () => {
    const archive = hostArchiveApi(store, memoryFiles(new Map()));
    await assert.rejects(archive.put('../escape', 'x'), /invalid archive key/);
    await assert.rejects(archive.get('a/../../b'), /invalid archive key/);
    assert.equal(await archive.get('databases/db_a/none'), null);
    await archive.remove('databases/db_a/');
    assert.deepEqual(await archive.list('databases/db_a/'), []);
  });
});
