import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { COUNTER, createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

interface ApiSandbox {
  id: string;
  parent_id: string | null;
  lineage: string[];
  fork_kind: string | null;
  state: string;
  ttl_seconds: number;
  persistent: boolean;
}

describe('disk forks, lineage and identity (real gVisor)', () => {
  let p: TestPlatform;
  let root: string;
  const made: string[] = [];
  const count = async (id: string) =>
    Number((await exec(p, id, { cmd: 'cat', args: ['/tmp/count'] })).stdout);

  before(async () => {
    p = await startTestPlatform();
    root = await createSandbox(p, {
      template: 'base',
      memory_mb: 128,
      ttl_seconds: 900,
      persistent: true,
      idle_timeout_seconds: 600,
    });
    await p.json(`/v1/sandboxes/${root}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', COUNTER] },
    });
    await exec(p, root, {
      cmd: 'sh',
      args: ['-c', 'mkdir -p /srv/app && echo v1 > /srv/app/data && echo shm > /dev/shm/x'],
    });
    await waitFor(async () => (await count(root)) > 0, { what: 'the counter to start' });
  });
  after(async () => {
    for (const id of made) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p?.stop();
  });

  const fork = async (id: string, body: Record<string, unknown> = {}) => {
    const res = await p.api(`/v1/sandboxes/${id}/fork`, { method: 'POST', json: body });
    const sbx = (await res.json()) as ApiSandbox;
    assert.equal(res.status, 201, JSON.stringify(sbx));
    made.push(sbx.id);
    return sbx;
  };

  it("a disk fork has the parent's files and none of its processes; the parent runs on", async () => {
    const child = await fork(root, { metadata: { kind: 'disk' } });
    assert.equal(child.parent_id, root);
    assert.deepEqual(child.lineage, [root]);
    assert.equal(child.fork_kind, 'disk');
    assert.equal(child.state, 'running');
    assert.equal(child.ttl_seconds, 900, 'settings carry over, not defaults');
    assert.equal(child.persistent, true);

    const files = await exec(p, child.id, { cmd: 'cat', args: ['/srv/app/data', '/tmp/count'] });
    assert.equal(files.exit_code, 0);
    assert.match(files.stdout, /^v1\n\d+$/);
    // No process of the parent came along: the counter is frozen, /dev/shm is empty.
    const ps = await exec(p, child.id, {
      cmd: 'sh',
      args: ['-c', 'for d in /proc/[0-9]*; do cat $d/comm; done; ls -A /dev/shm'],
    });
    assert.doesNotMatch(ps.stdout, /python3/);
    assert.doesNotMatch(ps.stdout, /\bx\b/);
    // The agent's own relay (bulk transfers, previews, egress) is not one of them.
    assert.match(ps.stdout, /^relay$/m);
    const c1 = (await exec(p, child.id, { cmd: 'cat', args: ['/tmp/count'] })).stdout;
    // Long enough for a running counter to move: the parent's moves several steps meanwhile.
    const r1 = await count(root);
    await waitFor(async () => (await count(root)) > r1 + 5, {
      what: "the parent's counter to move on",
    });
    assert.equal((await exec(p, child.id, { cmd: 'cat', args: ['/tmp/count'] })).stdout, c1);
    assert.equal((await p.json(`/v1/sandboxes/${child.id}/processes`)).items.length, 0);

    // The parent still counts, and the two diverge.
    assert.ok((await count(root)) > r1);
    await exec(p, child.id, { cmd: 'sh', args: ['-c', 'echo v2 > /srv/app/data'] });
    assert.equal((await exec(p, root, { cmd: 'cat', args: ['/srv/app/data'] })).stdout, 'v1\n');
    // New processes start normally in the fork.
    assert.equal((await exec(p, child.id, { cmd: 'echo', args: ['ok'] })).stdout, 'ok\n');
  });

  it('forks of forks record their whole lineage; every copy has its own identity', async () => {
    const tree = await p.json<{ children: ApiSandbox[] }>(`/v1/sandboxes/${root}/fork-tree`, {
      method: 'POST',
      json: { count: 2 },
    });
    made.push(...tree.children.map((c) => c.id));
    const [a, b] = tree.children as [ApiSandbox, ApiSandbox];
    assert.deepEqual(a.lineage, [root]);
    assert.equal(a.fork_kind, 'memory');
    const grandchild = await fork(a.id);
    assert.deepEqual(grandchild.lineage, [root, a.id]);
    const snap = await p.json<{ id: string }>(`/v1/sandboxes/${grandchild.id}/snapshots`, {
      method: 'POST',
    });
    const great = await p.json<ApiSandbox>('/v1/sandboxes', {
      method: 'POST',
      json: { from_snapshot: snap.id },
    });
    made.push(great.id);
    assert.deepEqual(great.lineage, [root, a.id, grandchild.id]);
    assert.deepEqual((await p.json<ApiSandbox>(`/v1/sandboxes/${great.id}`)).lineage, [
      root,
      a.id,
      grandchild.id,
    ]);

    const ids = [root, a.id, b.id, grandchild.id, great.id];
    const ident = await Promise.all(
      ids.map((id) =>
        exec(p, id, { cmd: 'sh', args: ['-c', 'uname -n; cat /etc/machine-id'] }).then((r) =>
          r.stdout.trim().split('\n'),
        ),
      ),
    );
    assert.deepEqual(
      ident.map((l) => l[0]),
      ids.map((id) => id.replace(/_/g, '-')),
    );
    assert.equal(new Set(ident.map((l) => l[1])).size, ids.length);
  });

  it('bad fork input is a typed error and leaves nothing', async () => {
    const before = (await p.json<{ items: unknown[] }>('/v1/sandboxes?limit=500')).items.length;
    const unknown = await p.api('/v1/sandboxes/sbx_doesnotexist0000/fork', { method: 'POST' });
    assert.equal(unknown.status, 404);
    assert.equal(
      ((await unknown.json()) as { error: { code: string } }).error.code,
      'SANDBOX_NOT_FOUND',
    );
    const bad = await p.api(`/v1/sandboxes/${root}/fork`, {
      method: 'POST',
      json: { count: 2 },
    });
    assert.equal(bad.status, 400);
    const gone = await createSandbox(p, { template: 'base', memory_mb: 128 });
    await p.api(`/v1/sandboxes/${gone}`, { method: 'DELETE' });
    const stopped = await p.api(`/v1/sandboxes/${gone}/fork`, { method: 'POST' });
    assert.equal(stopped.status, 409);
    assert.equal(
      ((await stopped.json()) as { error: { code: string } }).error.code,
      'SANDBOX_NOT_RUNNING',
    );
    const afterCount = (await p.json<{ items: unknown[] }>('/v1/sandboxes?limit=500')).items.length;
    assert.equal(afterCount, before, 'no sandbox was left behind');
  });
});
