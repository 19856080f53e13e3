import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isMounted, unmountTree } from '../../src/storage/mounts';
import { HostVolumes } from '../../src/storage/host-volumes';

/** Extents of `file` that filefrag flags as shared with another file. */
function sharedExtents(file: string): number {
  const out = execFileSync('filefrag', ['-v', file], { encoding: 'utf8' });
  return out.split('\n').filter((l) => /\bshared\b/.test(l)).length;
}

const home = mkdtempSync('/tmp/warren-pool-');
after(async () => {
  await unmountTree(home);
  rmSync(home, { recursive: true, force: true });
});

describe('volume pool (real mounts)', () => {
  const root = join(home, 'volumes');

  it('makes an XFS pool on a host without reflinks, and clones share blocks', async () => {
    const vols = new HostVolumes(root);
    assert.equal(await vols.open(), null);
    assert.equal(vols.cloneMode, 'reflink');
    assert.ok(await isMounted(root), 'the pool is mounted on the volumes directory');
    const pool = statSync(`${root}-pool.xfs`);
    assert.ok(pool.blocks * 512 < pool.size / 100, 'the pool image is sparse');

    await vols.create('vol_a', 64, { journal: true });
    writeFileSync(join(vols.data('vol_a'), 'row'), 'parent');
    await vols.clone('vol_a', 'vol_b');
    assert.equal(readFileSync(join(vols.data('vol_b'), 'row'), 'utf8'), 'parent');
    assert.ok(sharedExtents(join(root, 'vol_b', 'volume.img')) > 0, 'the copy shares extents');

    writeFileSync(join(vols.data('vol_b'), 'row'), 'branch');
    assert.equal(readFileSync(join(vols.data('vol_a'), 'row'), 'utf8'), 'parent');
    await vols.remove('vol_a');
    assert.equal(readFileSync(join(vols.data('vol_b'), 'row'), 'utf8'), 'branch');
  });

  it('mounts the same pool again after an unmount, volumes kept', async () => {
    const first = new HostVolumes(root);
    await first.unmountAll();
    assert.equal(await isMounted(root), false);
    const again = new HostVolumes(root);
    assert.equal(await again.open(), null);
    assert.equal(again.cloneMode, 'reflink');
    await again.ensureMounted('vol_b');
    assert.equal(readFileSync(join(again.data('vol_b'), 'row'), 'utf8'), 'branch');
    assert.equal(await again.open(), null, 'open is safe to repeat');
    await again.remove('vol_b');
  });

  it('keeps plain copies in a volumes directory that already holds volumes', async () => {
    const legacy = join(home, 'legacy');
    mkdirSync(join(legacy, 'vol_old'), { recursive: true });
    const vols = new HostVolumes(legacy);
    assert.match((await vols.open()) ?? '', /made before the volume pool/);
    assert.equal(vols.cloneMode, 'copy');
    assert.equal(await isMounted(legacy), false);
    await vols.create('vol_c', 16);
    writeFileSync(join(vols.data('vol_c'), 'row'), 'copied');
    await vols.clone('vol_c', 'vol_d');
    assert.equal(readFileSync(join(vols.data('vol_d'), 'row'), 'utf8'), 'copied');

    // A copy with paths emptied: a file removed, a directory's entries removed, a missing path fine.
    mkdirSync(join(vols.data('vol_c'), 'outbox', 'sub'), { recursive: true });
    writeFileSync(join(vols.data('vol_c'), 'outbox', 'seg'), 'x');
    writeFileSync(join(vols.data('vol_c'), 'lock'), 'x');
    // A link on the way out of the volume is not followed: what it points at stays.
    const outside = join(home, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'victim'), 'kept');
    symlinkSync(outside, join(vols.data('vol_c'), 'link'));
    await vols.clone('vol_c', 'vol_e', {
      clear: ['lock', 'outbox', 'missing/file', 'link/victim'],
    });
    assert.equal(readFileSync(join(outside, 'victim'), 'utf8'), 'kept');
    rmSync(join(vols.data('vol_c'), 'link'));
    rmSync(join(vols.data('vol_e'), 'link'));
    assert.deepEqual(readdirSync(vols.data('vol_e')).sort(), ['outbox', 'row']);
    assert.deepEqual(readdirSync(join(vols.data('vol_e'), 'outbox')), []);
    assert.deepEqual(readdirSync(join(vols.data('vol_c'), 'outbox')).sort(), ['seg', 'sub']);
    for (const bad of ['../vol_c/data/row', '/etc/passwd', '', '.', 'a/../../x'])
      await assert.rejects(vols.clone('vol_c', 'vol_f', { clear: [bad] }), {
        code: 'INVALID_REQUEST',
      });
    assert.equal(existsSync(join(legacy, 'vol_f')), false, 'a refused clone leaves nothing');
    await vols.unmountAll();
  });
});
