/**
 * Disk limits and volumes against real runsc: writes past disk_mb or past a
 * volume's size fail with ENOSPC inside the sandbox; a writable attach is
 * exclusive and read-only attaches are shared; volume data survives its
 * sandboxes, hibernate/wake and a restart of the platform.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Sandbox, Volumes, WarrenError } from '@warren/sdk';
import {
  createSandbox,
  exec,
  startTestPlatform,
  unmountBelow,
  type TestPlatform,
  runCli,
} from '../fixture';

async function expectError(res: Response, status: number, code: string): Promise<void> {
  const body = (await res.json()) as { error?: { code: string; message: string } };
  assert.equal(res.status, status, JSON.stringify(body));
  assert.equal(body.error?.code, code, JSON.stringify(body));
}

const sh = (p: TestPlatform, id: string, script: string) =>
  exec(p, id, { cmd: 'sh', args: ['-c', script] });

/** Mounts of this platform's home that are still there. */
function mountsBelow(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(`${dir}/`));
}

describe('disk limits and volumes (real gVisor)', () => {
  let p: TestPlatform;
  const created: string[] = [];

  before(async () => {
    p = await startTestPlatform({ volumeMaxMb: 256, volumesPerSandbox: 2 });
  });
  after(async () => {
    for (const id of created) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p?.stop();
  });

  const create = async (body: Record<string, unknown>) => {
    const id = await createSandbox(p, { template: 'base', ...body });
    created.push(id);
    return id;
  };
  const destroy = async (id: string) => {
    await p.json(`/v1/sandboxes/${id}`, { method: 'DELETE' });
  };

  it('writing past disk_mb fails with ENOSPC in the sandbox and not on the host', async () => {
    const id = await create({ disk_mb: 64 });
    const sbx = await p.json(`/v1/sandboxes/${id}`);
    assert.equal(sbx.disk_mb, 64);
    const r = await sh(p, id, 'dd if=/dev/zero of=/root/big bs=1M count=100; echo rc=$?');
    assert.match(r.stderr, /No space left on device/);
    assert.match(r.stdout, /rc=1/);
    const image = join(p.home, 'sandboxes', id, 'disk', 'disk.img');
    assert.ok(statSync(image).blocks * 512 <= 64 * 1024 * 1024, 'the host image stays in its size');
    // Freed space can be written again, and the sandbox goes on working.
    const again = await sh(
      p,
      id,
      'rm /root/big && dd if=/dev/zero of=/root/b2 bs=1M count=20 2>&1',
    );
    assert.equal(again.exit_code, 0, again.stdout);
    await destroy(id);
    await p.host.settle();
    assert.equal(existsSync(join(p.home, 'sandboxes', id)), false);
    assert.deepEqual(mountsBelow(join(p.home, 'sandboxes')), []);
  });

  it('a sandbox from a snapshot keeps the disk size and the files of its source', async () => {
    const id = await create({ disk_mb: 96 });
    await sh(p, id, 'dd if=/dev/zero of=/root/half bs=1M count=40 2>/dev/null');
    const snap = await p.json(`/v1/sandboxes/${id}/snapshots`, { method: 'POST' });
    await destroy(id);
    let child: string | undefined;
    try {
      child = await create({ from_snapshot: snap.id });
      assert.equal((await p.json(`/v1/sandboxes/${child}`)).disk_mb, 96);
      const r = await sh(
        p,
        child,
        'ls -l /root/half; dd if=/dev/zero of=/root/more bs=1M count=120',
      );
      assert.match(r.stdout, / 41943040 /);
      assert.match(r.stderr, /No space left on device/);
    } finally {
      if (child) await destroy(child);
      await p.api(`/v1/snapshots/${snap.id}`, { method: 'DELETE' });
    }
  });

  it('refuses a disk_mb outside the template limits', async () => {
    const t = await p.json('/v1/templates/base');
    assert.ok(t.default_disk_mb > 0 && t.max_disk_mb >= t.default_disk_mb);
    await expectError(
      await p.api('/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base', disk_mb: t.max_disk_mb + 1 },
      }),
      400,
      'RESOURCES_OUT_OF_RANGE',
    );
  });

  it('bad volume input gets typed errors and leaves nothing behind', async () => {
    const post = (json: unknown) => p.api('/v1/volumes', { method: 'POST', json });
    await expectError(await post({ name: 'Bad Name', size_mb: 16 }), 400, 'INVALID_REQUEST');
    await expectError(await post({ name: '../x', size_mb: 16 }), 400, 'INVALID_REQUEST');
    await expectError(await post({ name: 'big', size_mb: 257 }), 400, 'VOLUME_QUOTA_EXCEEDED');
    assert.equal((await post({ name: 'bad-input', size_mb: 16 })).status, 201);
    await expectError(await post({ name: 'bad-input', size_mb: 16 }), 409, 'VOLUME_EXISTS');
    await expectError(await p.api('/v1/volumes/nope'), 404, 'VOLUME_NOT_FOUND');

    const attach = (volumes: unknown) =>
      p.api('/v1/sandboxes', { method: 'POST', json: { template: 'base', volumes } });
    const v = (mount_path: string, name = 'bad-input') => [{ name, mount_path }];
    for (const path of ['data', '/', '/opt/warren', '/run/warren/x', '/proc/x', '/a/../b', '/a/'])
      await expectError(await attach(v(path)), 400, 'INVALID_MOUNT_PATH');
    await expectError(await attach(v('/data', 'unknown')), 404, 'VOLUME_NOT_FOUND');
    await expectError(
      await attach([
        { name: 'bad-input', mount_path: '/a', read_only: true },
        { name: 'bad-input', mount_path: '/b', read_only: true },
        { name: 'bad-input', mount_path: '/c', read_only: true },
      ]),
      400,
      'VOLUME_QUOTA_EXCEEDED',
    );
    // A mount path the template has a non-empty directory at is refused by the guest.
    await expectError(await attach(v('/etc')), 400, 'INVALID_MOUNT_PATH');
    await p.host.settle();
    assert.deepEqual(p.runscContainers(), [], 'no sandbox was left');
    assert.deepEqual(readdirSync(join(p.home, 'sandboxes')), []);
    const vol = await p.json('/v1/volumes/bad-input');
    assert.deepEqual(vol.attachments, [], 'failed creates hold no attachment');
    assert.equal((await p.api('/v1/volumes/bad-input', { method: 'DELETE' })).status, 204);
  });

  it('rw attach is exclusive, ro is shared, size is enforced, data outlives sandboxes and hibernation', async () => {
    const vol = await p.json('/v1/volumes', {
      method: 'POST',
      json: { name: 'data', size_mb: 32 },
    });
    assert.equal(vol.size_mb, 32);
    const writer = await create({ volumes: [{ name: 'data', mount_path: '/data' }] });
    const view = await p.json(`/v1/sandboxes/${writer}`);
    assert.deepEqual(view.volumes, [{ name: 'data', mount_path: '/data', read_only: false }]);
    let r = await sh(p, writer, 'echo kept > /data/note && cat /data/note');
    assert.equal(r.stdout, 'kept\n');
    r = await sh(
      p,
      writer,
      'dd if=/dev/zero of=/data/fill bs=1M count=64; echo rc=$?; rm /data/fill',
    );
    assert.match(r.stderr, /No space left on device/, 'the volume size is its limit');

    const rw = [{ name: 'data', mount_path: '/data' }];
    const ro = [{ name: 'data', mount_path: '/data', read_only: true }];
    const tryCreate = (volumes: unknown) =>
      p.api('/v1/sandboxes', { method: 'POST', json: { template: 'base', volumes } });
    await expectError(await tryCreate(rw), 409, 'VOLUME_IN_USE');
    await expectError(await tryCreate(ro), 409, 'VOLUME_IN_USE');
    await expectError(await p.api('/v1/volumes/data', { method: 'DELETE' }), 409, 'VOLUME_IN_USE');
    await expectError(
      await p.api(`/v1/sandboxes/${writer}/snapshots`, { method: 'POST' }),
      409,
      'SANDBOX_HAS_VOLUMES',
    );
    await expectError(
      await p.api(`/v1/sandboxes/${writer}/fork-tree`, { method: 'POST', json: { count: 1 } }),
      409,
      'SANDBOX_HAS_VOLUMES',
    );

    // Hibernate and wake: the volume is bound again and the data is there.
    await p.json(`/v1/sandboxes/${writer}/hibernate`, { method: 'POST' });
    await p.host.settle(); // the disk is released in the background
    assert.deepEqual(mountsBelow(join(p.home, 'sandboxes', writer)), [], 'no mounts while asleep');
    await p.json(`/v1/sandboxes/${writer}/wake`, { method: 'POST' });
    r = await sh(p, writer, 'cat /data/note && echo more >> /data/note && cat /data/note');
    assert.equal(r.stdout, 'kept\nkept\nmore\n');
    await destroy(writer);

    // Read-only attaches, two at once; a writer is refused while they hold it.
    const r1 = await create({ volumes: ro });
    const r2 = await create({ volumes: [{ name: 'data', mount_path: '/mnt/v', read_only: true }] });
    assert.equal((await sh(p, r1, 'cat /data/note')).stdout, 'kept\nmore\n');
    assert.equal((await sh(p, r2, 'cat /mnt/v/note')).stdout, 'kept\nmore\n');
    r = await sh(p, r1, 'echo x > /data/other; echo rc=$?');
    assert.match(r.stderr, /Read-only file system/);
    await expectError(await tryCreate(rw), 409, 'VOLUME_IN_USE');
    const held = await p.json('/v1/volumes/data');
    assert.deepEqual(
      held.attachments.map((a: { sandbox_id: string }) => a.sandbox_id).sort(),
      [r1, r2].sort(),
    );
    await destroy(r1);
    await destroy(r2);

    await p.host.settle();
    assert.equal((await p.api('/v1/volumes/data', { method: 'DELETE' })).status, 204);
    await expectError(await p.api('/v1/volumes/data'), 404, 'VOLUME_NOT_FOUND');
    assert.equal(existsSync(join(p.home, 'volumes', vol.id)), false, 'the image is gone');
    // The volume pool (volume-pool.ts) stays mounted on the volumes directory, and the
    // disks made ahead of time (disk-pool.ts) in theirs; nothing else.
    const pool = join(p.home, 'volumes');
    assert.deepEqual(
      mountsBelow(p.home).filter((m) => m !== pool && !m.startsWith(join(p.home, 'disk-pool/'))),
      [],
    );
  });
});

describe('volumes through the SDK and CLI (real gVisor)', () => {
  let p: TestPlatform;
  before(async () => {
    p = await startTestPlatform();
  });
  after(async () => {
    await p?.stop();
  });

  const cli = (args: string[]) => runCli(p, args);

  it('warren volume create|ls|rm and Sandbox.create({ volumes })', async () => {
    const conn = { apiUrl: p.url, apiKey: p.adminToken };
    const made = await cli(['volume', 'create', 'cli-vol', '--size', '16']);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /^vol_[a-z0-9]{16}\n$/);
    const sbx = await Sandbox.create({
      ...conn,
      diskMb: 128,
      volumes: [{ name: 'cli-vol', mount_path: '/work' }],
    });
    try {
      assert.equal(sbx.info.disk_mb, 128);
      await sbx.files.write('/work/hello.txt', 'from the sdk');
      const ls = await cli(['volume', 'ls']);
      assert.equal(ls.code, 0, ls.stderr);
      assert.match(ls.stdout, new RegExp(`cli-vol\\s+16 MB\\s+\\S+ MB\\s+${sbx.id}`));
      const refused = await cli(['volume', 'rm', 'cli-vol']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /VOLUME_IN_USE/);
      await assert.rejects(Volumes.delete('cli-vol', conn), (err: unknown) => {
        assert.ok(err instanceof WarrenError && err.code === 'VOLUME_IN_USE', String(err));
        return true;
      });
    } finally {
      await sbx.kill();
    }
    await p.host.settle();
    assert.equal((await Volumes.get('cli-vol', conn)).attachments.length, 0);
    const rm = await cli(['volume', 'rm', 'cli-vol']);
    assert.equal(rm.code, 0, rm.stderr);
    assert.deepEqual(await Volumes.list(conn), []);
  });
});

describe('volumes across a platform restart (real gVisor)', () => {
  it('keeps volume data when the whole platform stops and starts again', async () => {
    const home = mkdtempSync('/tmp/wt-');
    try {
      const first = await startTestPlatform({ home, keepHome: true });
      try {
        await first.json('/v1/volumes', { method: 'POST', json: { name: 'keep', size_mb: 16 } });
        const id = await createSandbox(first, {
          template: 'base',
          volumes: [{ name: 'keep', mount_path: '/srv/keep' }],
        });
        await sh(first, id, 'echo survived > /srv/keep/file');
      } finally {
        // Destroys the sandbox and unmounts the volume; its image stays.
        await first.stop();
      }
      assert.deepEqual(mountsBelow(home), [], 'nothing mounted between the runs');
      const second = await startTestPlatform({ home });
      try {
        const id = await createSandbox(second, {
          template: 'base',
          volumes: [{ name: 'keep', mount_path: '/srv/keep', read_only: true }],
        });
        assert.equal((await sh(second, id, 'cat /srv/keep/file')).stdout, 'survived\n');
        await second.json(`/v1/sandboxes/${id}`, { method: 'DELETE' });
        await second.host.settle();
        assert.equal((await second.api('/v1/volumes/keep', { method: 'DELETE' })).status, 204);
      } finally {
        await second.stop();
      }
    } finally {
      unmountBelow(home);
      rmSync(home, { recursive: true, force: true });
    }
  });
});
