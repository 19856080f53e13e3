import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { COUNTER, createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

describe('snapshots and fork-trees of running sandboxes (real gVisor)', () => {
  let p: TestPlatform;
  let parent: string;
  const count = async (id: string) =>
    Number((await exec(p, id, { cmd: 'cat', args: ['/tmp/count'] })).stdout);
  const code = async (res: Response) => [
    res.status,
    ((await res.json()) as { error: { code: string } }).error.code,
  ];

  before(async () => {
    p = await startTestPlatform();
    parent = await createSandbox(p, { template: 'base', memory_mb: 128, env: { FROM: 'parent' } });
    await p.json(`/v1/sandboxes/${parent}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', COUNTER] },
    });
    await p.api(`/v1/sandboxes/${parent}/files?path=/root/state.txt`, {
      method: 'PUT',
      body: 'captured',
    });
    await waitFor(async () => (await count(parent)) > 0, { what: 'the counter to start' });
  });
  after(async () => {
    await p?.stop();
  });

  it('a snapshot captures a running sandbox, which goes on running; a new sandbox continues from it', async () => {
    const before = await count(parent);
    const res = await p.api(`/v1/sandboxes/${parent}/snapshots`, { method: 'POST' });
    assert.equal(res.status, 201);
    const snap = (await res.json()) as {
      id: string;
      size_bytes: number;
      parent_pause_ms: number;
      sandbox_id: string;
    };
    assert.match(snap.id, /^snap_/);
    assert.equal(snap.sandbox_id, parent);
    assert.ok(snap.size_bytes > 0 && snap.parent_pause_ms > 0);
    assert.ok((await count(parent)) >= before, 'the parent still runs');
    assert.equal((await p.json('/v1/snapshots')).items[0].id, snap.id);
    assert.equal((await p.json(`/v1/snapshots/${snap.id}`)).id, snap.id);

    const child = await p.json(`/v1/sandboxes`, {
      method: 'POST',
      json: { from_snapshot: snap.id },
    });
    try {
      assert.equal(child.parent_id, parent);
      assert.equal(child.snapshot_id, snap.id);
      const r = await exec(p, child.id, {
        cmd: 'sh',
        args: ['-c', 'cat /root/state.txt; echo " $FROM"'],
      });
      assert.equal(r.stdout, 'captured parent\n');
      const c1 = await count(child.id);
      assert.ok(c1 >= before, `the counter continued from the capture: ${before} -> ${c1}`);
      await waitFor(async () => (await count(child.id)) > c1, {
        what: 'the captured process to count on in the child',
      });
      // They diverge.
      await exec(p, child.id, { cmd: 'sh', args: ['-c', 'echo child > /root/only-child'] });
      assert.notEqual(
        (await exec(p, parent, { cmd: 'cat', args: ['/root/only-child'] })).exit_code,
        0,
      );
    } finally {
      await p.api(`/v1/sandboxes/${child.id}`, { method: 'DELETE' });
    }

    const del = await p.api(`/v1/snapshots/${snap.id}`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    const store = join(p.home, 'snapshots', 'store');
    assert.ok(!existsSync(join(store, 'manifests', `${snap.id}.json`)));
    assert.deepEqual(
      readdirSync(join(store, 'blobs'), { recursive: true }).filter((f) => String(f).includes('/')),
      [],
      'storage freed',
    );
    assert.deepEqual(await code(await p.api(`/v1/snapshots/${snap.id}`)), [
      404,
      'SNAPSHOT_NOT_FOUND',
    ]);
  });

  it('bad snapshot input is a typed error and leaves nothing', async () => {
    const before = readdirSync(join(p.home, 'sandboxes')).length;
    assert.deepEqual(
      await code(
        await p.api('/v1/sandboxes', {
          method: 'POST',
          json: { from_snapshot: 'snap_doesnotexist0000' },
        }),
      ),
      [404, 'SNAPSHOT_NOT_FOUND'],
    );
    for (const count of [0, 17]) {
      assert.deepEqual(
        await code(
          await p.api(`/v1/sandboxes/${parent}/fork-tree`, { method: 'POST', json: { count } }),
        ),
        [400, 'INVALID_REQUEST'],
      );
    }
    assert.equal(readdirSync(join(p.home, 'sandboxes')).length, before);
    const gone = await createSandbox(p, { template: 'base', memory_mb: 128 });
    await p.json(`/v1/sandboxes/${gone}`, { method: 'DELETE' });
    assert.deepEqual(
      await code(await p.api(`/v1/sandboxes/${gone}/snapshots`, { method: 'POST' })),
      [409, 'SANDBOX_NOT_RUNNING'],
    );
  });

  it('a fork-tree of 16: all children run and diverge; the parent never stops answering', async () => {
    let parentFailures = 0;
    let parentAnswers = 0;
    let forking = true;
    const watcher = (async () => {
      while (forking) {
        const r = await p.api(`/v1/sandboxes/${parent}/exec`, {
          method: 'POST',
          json: { cmd: 'true' },
        });
        if (r.status === 200) parentAnswers++;
        else parentFailures++;
        await r.arrayBuffer();
        await delay(50); // pacing of the probe, not a wait for anything
      }
    })();
    const started = Date.now();
    const res = await p.api(`/v1/sandboxes/${parent}/fork-tree`, {
      method: 'POST',
      json: { count: 16, metadata: { tree: 't1' } },
    });
    const took = Date.now() - started;
    forking = false;
    await watcher;
    const body = (await res.json()) as {
      parent_pause_ms: number;
      children: Array<{ id: string; parent_id: string; state: string }>;
    };
    assert.equal(res.status, 201, JSON.stringify(body));
    const ids = body.children.map((c) => c.id);
    try {
      assert.equal(ids.length, 16);
      assert.equal(new Set(ids).size, 16);
      assert.ok(body.children.every((c) => c.parent_id === parent && c.state === 'running'));
      assert.equal(parentFailures, 0, 'the parent answered every exec during the fork');
      assert.ok(parentAnswers > 0);
      assert.ok(body.parent_pause_ms < took);
      await Promise.all(
        ids.map((id) => exec(p, id, { cmd: 'sh', args: ['-c', `echo ${id} > /root/me`] })),
      );
      const back = await Promise.all(
        ids.map((id) => exec(p, id, { cmd: 'cat', args: ['/root/me', '/root/state.txt'] })),
      );
      assert.deepEqual(
        back.map((r) => r.stdout),
        ids.map((id) => `${id}\ncaptured`),
      );
      const listed = await p.json('/v1/sandboxes?metadata.tree=t1&limit=50');
      assert.equal(listed.items.length, 16);
      // Each child has its own identity: host name, machine id, kernel entropy.
      const ident = await Promise.all(
        ids.map((id) =>
          exec(p, id, {
            cmd: 'sh',
            args: ['-c', 'uname -n; cat /etc/machine-id; od -An -N16 -tx1 /dev/urandom'],
          }),
        ),
      );
      const lines = ident.map((r) => r.stdout.trim().split('\n'));
      assert.deepEqual(
        lines.map((l) => l[0]),
        ids.map((id) => id.replace(/_/g, '-')),
      );
      assert.equal(new Set(lines.map((l) => l[1])).size, 16, 'distinct machine ids');
      assert.ok(lines.every((l) => /^[0-9a-f]{32}$/.test(l[1] ?? '')));
      assert.equal(new Set(lines.map((l) => l[2])).size, 16, 'distinct entropy');
    } finally {
      for (const id of ids) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
    // Nothing is left of the capture the children were restored from.
    assert.deepEqual(readdirSync(join(p.home, 'snapshots', '.scratch')), []);
  });
});
