import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';

describe('sandboxes over REST (real gVisor)', () => {
  let p: TestPlatform;
  before(async () => {
    p = await startTestPlatform();
  });
  after(async () => {
    await p?.stop();
  });

  it('create, exec and delete exactly as the reference curl lines do', async () => {
    // POST /v1/sandboxes {"template":"base"} -> JSON with id
    const created = await p.api('/v1/sandboxes', { method: 'POST', json: { template: 'base' } });
    assert.equal(created.status, 201);
    const sbx = (await created.json()) as { id: string; state: string };
    assert.match(sbx.id, /^sbx_[0-9a-z]{16}$/);
    assert.equal(sbx.state, 'running');

    const res = await exec(p, sbx.id, { cmd: 'uname', args: ['-a'] });
    assert.equal(res.exit_code, 0);
    assert.match(res.stdout, /^Linux /);
    assert.equal(res.stderr, '');

    const del = await p.api(`/v1/sandboxes/${sbx.id}`, { method: 'DELETE' });
    assert.equal(del.status, 200);
    assert.deepEqual(await del.json(), { id: sbx.id, deleted: true });
    await p.host.settle(); // runsc's own teardown finishes in the background
    assert.ok(!p.runscContainers().includes(sbx.id), 'runsc container removed');
    assert.ok(!existsSync(join(p.home, 'sandboxes', sbx.id)), 'host state removed');

    const after = await p.json(`/v1/sandboxes/${sbx.id}`);
    assert.equal(after.state, 'stopped');
    assert.equal(after.stop_reason, 'deleted');
    const again = await p.api(`/v1/sandboxes/${sbx.id}/exec`, {
      method: 'POST',
      json: { cmd: 'true' },
    });
    assert.equal(again.status, 409);
    assert.equal(
      ((await again.json()) as { error: { code: string } }).error.code,
      'SANDBOX_NOT_RUNNING',
    );
    const twice = await p.json(`/v1/sandboxes/${sbx.id}`, { method: 'DELETE' });
    assert.equal(twice.deleted, false);
  });

  it('is isolated from the host and from other sandboxes', async () => {
    const a = await createSandbox(p);
    const b = await createSandbox(p);
    try {
      // The host's project directory and the platform's state are not visible inside.
      const ls = await exec(p, a, {
        cmd: 'sh',
        args: ['-c', `ls ${p.home} /work 2>&1; cat /proc/1/cmdline | tr '\\0' ' '`],
      });
      assert.match(ls.stdout, /No such file or directory/);
      assert.match(ls.stdout, /\/opt\/warren\/node/);
      // Writes in one sandbox are invisible to the other, and the shared template is untouched.
      await exec(p, a, { cmd: 'sh', args: ['-c', 'echo secret > /etc/only-a'] });
      const other = await exec(p, b, { cmd: 'cat', args: ['/etc/only-a'] });
      assert.notEqual(other.exit_code, 0);
      const tpl = await p.host.templateRecord('base');
      assert.ok(!existsSync(join(tpl.rootfs, 'etc/only-a')));
      // gVisor's own kernel answers, not the host's.
      const dmesg = await exec(p, a, { cmd: 'sh', args: ['-c', 'dmesg | head -n 3'] });
      assert.match(dmesg.stdout, /gVisor|Starting/i);
    } finally {
      await p.api(`/v1/sandboxes/${a}`, { method: 'DELETE' });
      await p.api(`/v1/sandboxes/${b}`, { method: 'DELETE' });
    }
  });

  it('get, list with label and state filters, pagination, patch', async () => {
    const ids: string[] = [];
    try {
      for (const team of ['red', 'red', 'blue']) {
        ids.push(
          await createSandbox(p, {
            template: 'base',
            metadata: { team, suite: 'list' },
            env: { SECRET_X: 'v' },
          }),
        );
      }
      const one = await p.json(`/v1/sandboxes/${ids[0]}`);
      assert.equal(one.template, 'base');
      assert.deepEqual(one.metadata, { team: 'red', suite: 'list' });
      assert.deepEqual(one.env_keys, ['SECRET_X']);
      assert.equal(JSON.stringify(one).includes('"v"'), false, 'env values are never returned');
      assert.equal(one.ttl_seconds, 3600);

      const red = await p.json('/v1/sandboxes?metadata.team=red&metadata.suite=list');
      assert.deepEqual(
        new Set(red.items.map((s: { id: string }) => s.id)),
        new Set(ids.slice(0, 2)),
      );
      const running = await p.json('/v1/sandboxes?state=running&metadata.suite=list');
      assert.equal(running.items.length, 3);

      const page1 = await p.json('/v1/sandboxes?metadata.suite=list&limit=2');
      assert.equal(page1.items.length, 2);
      assert.ok(page1.next_cursor);
      const page2 = await p.json(
        `/v1/sandboxes?metadata.suite=list&limit=2&cursor=${page1.next_cursor}`,
      );
      assert.equal(page2.items.length, 1);
      assert.equal(page2.next_cursor, null);
      const all = [...page1.items, ...page2.items].map((s: { id: string }) => s.id);
      assert.deepEqual(new Set(all), new Set(ids));

      const patched = await p.json(`/v1/sandboxes/${ids[2]}`, {
        method: 'PATCH',
        json: { metadata: { team: 'green' }, ttl_seconds: 120 },
      });
      assert.deepEqual(patched.metadata, { team: 'green' });
      assert.equal(patched.ttl_seconds, 120);
      const left = Date.parse(patched.expires_at) - Date.now();
      assert.ok(left > 100_000 && left <= 120_000, `expires in ${left} ms`);
    } finally {
      for (const id of ids) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });

  it('applies cpu and memory within the template limits, refuses more', async () => {
    const id = await createSandbox(p, { template: 'base', memory_mb: 256, cpu: 0.5 });
    try {
      const mem = await exec(p, id, { cmd: 'head', args: ['-n', '1', '/proc/meminfo'] });
      assert.match(mem.stdout, /MemTotal:\s+262144 kB/);
      const sbx = await p.json(`/v1/sandboxes/${id}`);
      assert.equal(sbx.memory_mb, 256);
      assert.equal(sbx.cpu, 0.5);
    } finally {
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
    await p.host.settle(); // the deleted sandbox's directory goes in the background
    const before = readdirSync(join(p.home, 'sandboxes')).length;
    const big = await p.api('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'base', memory_mb: 999_999 },
    });
    assert.equal(big.status, 400);
    assert.equal(
      ((await big.json()) as { error: { code: string } }).error.code,
      'RESOURCES_OUT_OF_RANGE',
    );
    assert.equal(readdirSync(join(p.home, 'sandboxes')).length, before);
  });
});
