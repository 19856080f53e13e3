import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import type { FileInfo, HostFileApi } from '@warren/protocol';
import { hostArchiveApi } from '../../src/archive';
import { LocalObjectStore } from '../../src/archive/local';
import { listWithin, onVolume, openWithin } from '../../src/archive/volume-read';

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
    assert.equal(await archive.get('databases/db_a/wal/000000010000000000000001'), 'one');
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

describe('archive: reading from a volume on the host', () => {
  const dir = mkdtempSync('/tmp/wt-volume-read-');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const root = join(dir, 'data');
  const outside = join(dir, 'host-secret');
  mkdirSync(join(root, 'out'), { recursive: true });
  writeFileSync(outside, "not the sandbox's");
  writeFileSync(join(root, 'out', 'seg'), 'wal bytes');
  writeFileSync(join(root, 'out', 'empty'), '');
  symlinkSync(outside, join(root, 'out', 'link'));
  symlinkSync(dir, join(root, 'escape'));
  execFileSync('mkfifo', [join(root, 'out', 'fifo')]);
  const text = async (f: Awaited<ReturnType<typeof openWithin>>) => {
    const chunks: Buffer[] = [];
    for await (const c of f!.stream) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString();
  };

  it('maps a sandbox path to its volume, by mount path or by the volumes directory', () => {
    const v = { id: 'vol_1', name: 'db', mountPath: '/var/lib/pg', readOnly: false };
    assert.deepEqual(onVolume([v], '/var/lib/pg/out/seg'), { volume: v, rel: 'out/seg' });
    assert.deepEqual(onVolume([v], '/run/warren/volumes/db/out'), { volume: v, rel: 'out' });
    assert.equal(onVolume([v], '/var/lib/pgx/seg'), null);
    assert.equal(onVolume([v], '/var/lib/pg'), null);
    assert.equal(onVolume([v], '/var/lib/pg/../etc/passwd'), null);
  });

  it('reads a regular file, and an empty one', async () => {
    const f = await openWithin(root, 'out/seg');
    assert.equal(f?.size, 9);
    assert.equal(await text(f), 'wal bytes');
    const e = await openWithin(root, 'out/empty');
    assert.equal(e?.size, 0);
    assert.equal(await text(e), '');
  });

  it('follows nothing out of the volume and opens no FIFO', async () => {
    assert.equal(await openWithin(root, 'out/link'), null);
    assert.equal(await openWithin(root, 'escape/host-secret'), null);
    assert.equal(await openWithin(root, '../host-secret'), null);
    assert.equal(await openWithin(root, 'out/fifo'), null);
    assert.equal(await openWithin(root, 'out/missing'), null);
  });

  it('lists the regular files of a directory that is really in the volume', async () => {
    assert.deepEqual((await listWithin(root, 'out'))?.sort(), ['empty', 'seg']);
    assert.equal(await listWithin(root, 'escape'), null);
    assert.equal(await listWithin(root, 'escape/data'), null);
    assert.equal(await listWithin(root, '..'), null);
    assert.equal(await listWithin(root, 'out/seg'), null);
    assert.equal(await listWithin(root, 'missing'), null);
  });

  it('collects through the volume when it can, and through the sandbox otherwise', async () => {
    const store = new LocalObjectStore(join(dir, 'archive'));
    const files = new Map([
      ['/v/out/seg', 'through the sandbox'],
      ['/v/out/link', "the sandbox's link target"],
    ]);
    const rel = (path: string) => path.slice('/v/'.length);
    const archive = hostArchiveApi(store, memoryFiles(files), {
      read: (_id, path) => openWithin(root, rel(path)),
      list: async () => null,
    });
    const moved = await archive.collect('sbx', '/v/out', 'wal/');
    assert.deepEqual(moved, [
      { key: 'wal/link', size: Buffer.byteLength("the sandbox's link target") },
      { key: 'wal/seg', size: 9 },
    ]);
    assert.equal(await archive.get('wal/seg'), 'wal bytes');
    assert.equal(await archive.get('wal/link'), "the sandbox's link target");
    assert.equal(files.size, 0);
  });
});
