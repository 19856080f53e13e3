import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalSnapshotStore, S3SnapshotStore } from '../../src/snapshots';
import { startS3, type TestS3 } from '../../../../test/s3';

const blobs = (root: string) =>
  readdirSync(join(root, 'blobs'), { recursive: true })
    .map(String)
    .filter((p) => p.includes('/') && !p.endsWith('.part'));

/** An image directory with the given files. */
const sha = (content: string) => createHash('sha256').update(content).digest('hex');

function image(dir: string, files: Record<string, string>): string {
  mkdirSync(dir, { recursive: true });
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
  return dir;
}

describe('local snapshot store', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync('/tmp/wt-store-');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps each content once and frees it when no snapshot refers to it', async () => {
    const store = new LocalSnapshotStore(join(dir, 'store'));
    const a = await store.put(
      'snap_a',
      image(join(dir, 'a'), { 'checkpoint.img': 'shared', 'pages.img': 'only a' }),
      { n: 1 },
    );
    await store.put('snap_b', image(join(dir, 'b'), { 'checkpoint.img': 'shared' }), { n: 2 });
    assert.equal(a.files.length, 2);
    assert.equal(blobs(store.root).length, 2, 'the shared file is stored once');
    assert.equal(await store.localBytes(), 'shared'.length + 'only a'.length);

    const out = join(dir, 'out-a');
    const m = await store.materialize<{ n: number }>('snap_a', out);
    assert.equal(m.meta.n, 1);
    assert.equal(readFileSync(join(out, 'pages.img'), 'utf8'), 'only a');
    assert.equal(readFileSync(join(out, 'checkpoint.img'), 'utf8'), 'shared');

    await store.delete('snap_a');
    assert.equal(blobs(store.root).length, 1, "a's own file is gone, the shared one stays");
    await store.delete('snap_b');
    assert.equal(blobs(store.root).length, 0);
    await assert.rejects(store.materialize('snap_a', join(dir, 'x')), {
      code: 'SNAPSHOT_NOT_FOUND',
    });
  });
});

describe('S3 snapshot store against a real S3-protocol server (s3rver)', () => {
  let s3: TestS3;
  let dir: string;
  before(async () => {
    s3 = await startS3();
    dir = mkdtempSync('/tmp/wt-store-');
  });
  after(async () => {
    await s3?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a host without the snapshot fetches it; deleting frees the bucket', async () => {
    const now = { ...s3.config, collectGraceSeconds: 0 }; // collected at once
    const hostA = new S3SnapshotStore(now, new LocalSnapshotStore(join(dir, 'a')));
    const hostB = new S3SnapshotStore(now, new LocalSnapshotStore(join(dir, 'b')));
    const big = Buffer.alloc(3 * 1024 * 1024, 7).toString('latin1');
    await hostA.put('snap_1', image(join(dir, 'img1'), { 'checkpoint.img': big }), { spec: 1 });
    await hostA.put('snap_2', image(join(dir, 'img2'), { 'checkpoint.img': big, 'x.img': 'x' }), {
      spec: 2,
    });
    const keys = await hostA.keys();
    assert.equal(keys.filter((k) => k.includes('/manifests/')).length, 2);
    assert.equal(keys.filter((k) => k.includes('/blobs/')).length, 2, 'shared content once');

    // Host B has nothing locally: it fetches manifest and files, checking their hashes.
    const out = join(dir, 'restore-b');
    const m = await hostB.materialize<{ spec: number }>('snap_2', out);
    assert.equal(m.meta.spec, 2);
    assert.equal(readFileSync(join(out, 'checkpoint.img'), 'latin1'), big);
    assert.equal(readFileSync(join(out, 'x.img'), 'utf8'), 'x');

    await assert.rejects(hostB.materialize('snap_missing', join(dir, 'm')), {
      code: 'SNAPSHOT_NOT_FOUND',
    });

    await hostA.delete('snap_2');
    assert.equal((await hostA.keys()).length, 2, 'snap_1 and its one file remain');
    await hostA.delete('snap_1');
    assert.deepEqual(await hostA.keys(), []);
    assert.equal(blobs(join(dir, 'a')).length, 0);
  });

  it('a file no image refers to is collected only past the grace period, counted from its last use', async () => {
    const store = new S3SnapshotStore(
      { ...s3.config, prefix: 'grace/', collectGraceSeconds: 2 },
      new LocalSnapshotStore(join(dir, 'g')),
    );
    const blobKeys = async () => (await store.keys()).filter((k) => k.includes('/blobs/'));
    await store.put('snap_g1', image(join(dir, 'g1'), { 'checkpoint.img': 'shared' }), {});
    await store.delete('snap_g1');
    assert.equal((await blobKeys()).length, 1, 'a fresh file outlives its image');
    await new Promise((r) => setTimeout(r, 2500));
    // An upload that finds the file in the bucket past half the grace period
    // writes it again: a collection while that upload is in flight (here:
    // right after it) keeps it.
    await store.put('snap_g2', image(join(dir, 'g2'), { 'checkpoint.img': 'shared' }), {});
    await store.delete('snap_g2');
    assert.equal((await blobKeys()).length, 1, 'a file just reused is kept');
    await new Promise((r) => setTimeout(r, 2500));
    await store.put('snap_g3', image(join(dir, 'g3'), { 'other.img': 'other' }), {});
    const other = (await blobKeys()).filter((k) => !k.endsWith(sha('shared')));
    await store.delete('snap_g3');
    assert.deepEqual(await blobKeys(), other, 'the old file is collected, the fresh one kept');
  });

  it('an unreachable store is a typed error', async () => {
    const store = new S3SnapshotStore(
      { ...s3.config, endpoint: 'http://127.0.0.1:1' },
      new LocalSnapshotStore(join(dir, 'c')),
    );
    await assert.rejects(store.materialize('snap_x', join(dir, 'y')), {
      code: 'SNAPSHOT_STORE_UNAVAILABLE',
    });
  });
});
