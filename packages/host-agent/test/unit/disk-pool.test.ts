import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DiskPool } from '../../src/storage/disk-pool';
import { isMounted, mountsBelow, unmountTree } from '../../src/storage/mounts';
import {
  prepareSandboxDisk,
  releaseAllSandboxDisks,
  releaseSandboxDisk,
  retireSandboxDisk,
} from '../../src/storage/sandbox-disk';

const home = mkdtempSync('/tmp/warren-disks-');
after(async () => {
  await unmountTree(home);
  rmSync(home, { recursive: true, force: true });
});

/** Size in MiB of the file system mounted at dir. */
const sizeMb = (dir: string) => {
  const s = statfsSync(dir);
  return (s.blocks * s.bsize) / 1024 / 1024;
};

describe('disks made ahead of time (real mounts)', () => {
  const poolDir = join(home, 'disk-pool');
  const sandboxes = join(home, 'sandboxes');
  mkdirSync(sandboxes);

  it('fills the sizes asked for, hands a ready disk over by rename, and makes one when none is ready', async () => {
    const pool = new DiskPool(poolDir);
    await pool.open([64]);
    await pool.filled();
    assert.equal(pool.readyCount(64), 2);

    const a = join(sandboxes, 'sbx_a');
    mkdirSync(a);
    const disk = await prepareSandboxDisk(a, 64, [], () => '', pool);
    assert.equal(disk.filestoreDir, join(a, 'disk', 'fs', 'overlay'));
    assert.ok(await isMounted(join(a, 'disk', 'fs')), 'the taken disk is mounted in the sandbox');
    assert.ok(existsSync(join(a, 'disk', 'disk.img')));
    assert.ok(existsSync(disk.volumesDir));
    assert.equal(pool.readyCount(64), 1, 'one ready disk left until the refill');

    // A size not ready is made in place (and asked for from now on).
    const b = join(sandboxes, 'sbx_b');
    mkdirSync(b);
    await prepareSandboxDisk(b, 96, [], () => '', pool);
    assert.ok(Math.abs(sizeMb(join(b, 'disk', 'fs')) - 96) < 8, 'a 96 MiB file system');
    await pool.filled();
    assert.equal(pool.readyCount(64), 2, 'refilled');
    assert.equal(pool.readyCount(96), 2, 'the new size is kept ready too');

    await releaseSandboxDisk(a);
    await releaseSandboxDisk(b);
    assert.deepEqual(await mountsBelow(sandboxes), []);
    assert.equal(existsSync(join(a, 'disk')), false);

    await pool.close();
    assert.deepEqual(await mountsBelow(poolDir), [], 'closing unmounts what the pool held');
    assert.deepEqual(readdirSync(poolDir), []);
  });

  it('keeps only the two sizes most recently asked for', async () => {
    const pool = new DiskPool(poolDir);
    await pool.open([64]);
    for (const size of [72, 80]) {
      const dir = join(sandboxes, `sbx_${size}`);
      mkdirSync(dir);
      await prepareSandboxDisk(dir, size, [], () => '', pool);
      await releaseSandboxDisk(dir);
    }
    await pool.filled();
    assert.equal(pool.readyCount(64), 0, 'the oldest size is dropped');
    assert.equal(pool.readyCount(72), 2);
    assert.equal(pool.readyCount(80), 2);
    assert.equal(
      (await mountsBelow(poolDir)).length,
      4,
      'no disk of a dropped size is left mounted',
    );
    await pool.close();
  });

  it('does not refill while creates are under way', async () => {
    let busy = false;
    const pool = new DiskPool(poolDir, () => busy);
    await pool.open([64]);
    await pool.filled();
    busy = true;
    const dir = join(sandboxes, 'sbx_busy');
    mkdirSync(dir);
    await prepareSandboxDisk(dir, 64, [], () => '', pool);
    await pool.filled();
    assert.equal(pool.readyCount(64), 1, 'no refill while busy');
    busy = false;
    await pool.filled();
    assert.equal(pool.readyCount(64), 2, 'refilled once idle');
    await releaseSandboxDisk(dir);
    await pool.close();
  });

  it('stops when the sandboxes are on another file system (no rename can hand a disk over)', async () => {
    const pool = new DiskPool(poolDir);
    await pool.open([64]);
    await pool.filled();
    const other = join('/dev/shm', `warren-exdev-${process.pid}`);
    mkdirSync(other, { recursive: true });
    try {
      const dir = join(other, 'sbx_elsewhere');
      mkdirSync(dir);
      await prepareSandboxDisk(dir, 64, [], () => '', pool);
      assert.ok(await isMounted(join(dir, 'disk', 'fs')), 'the disk was made in place');
      assert.equal(pool.readyCount(64), 0);
      assert.deepEqual(await mountsBelow(poolDir), [], 'the pool closed and removed its disks');
      await releaseSandboxDisk(dir);
    } finally {
      await unmountTree(other);
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('removes what an earlier run left mounted when it opens', async () => {
    const first = new DiskPool(poolDir);
    await first.open([64]);
    await first.filled();
    // No close: as after a crash.
    assert.equal((await mountsBelow(poolDir)).length, 2);
    const second = new DiskPool(poolDir);
    await second.open([]);
    assert.deepEqual(await mountsBelow(poolDir), []);
    assert.deepEqual(readdirSync(poolDir), []);
    await second.close();
  });

  it('moves a disk aside so that a new one takes its place while the old one is still mounted', async () => {
    const dir = join(sandboxes, 'sbx_retire');
    mkdirSync(dir);
    await prepareSandboxDisk(dir, 64, [], () => '');
    const retired = await retireSandboxDisk(dir);
    assert.ok(retired, 'moved');
    assert.ok(await isMounted(join(retired, 'fs')), 'the old disk is still mounted where it went');
    await prepareSandboxDisk(dir, 64, [], () => '');
    assert.ok(await isMounted(join(dir, 'disk', 'fs')), 'a new disk in its place');
    assert.equal(await retireSandboxDisk(join(sandboxes, 'none')), null, 'nothing to move');
    await releaseAllSandboxDisks(dir);
    assert.deepEqual(await mountsBelow(dir), []);
    assert.deepEqual(readdirSync(dir), []);
  });
});
