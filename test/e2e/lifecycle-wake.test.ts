/**
 * A wake right after a hibernate restores into a new runtime container while
 * the runtime still removes the one hibernated: repeatedly, with files and
 * processes kept, and with nothing of the old containers left afterwards
 * (runsc state, cgroups, mounts), also when the sandbox is deleted while
 * those removals are still running. A create and a wake restore with every
 * CPU and then hold the sandbox to its `cpu`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ownerOf } from '../../packages/host-agent/src/sandboxes/runtime-ids';
import {
  COUNTER,
  cpuQuotaOf,
  createSandbox,
  exec,
  startTestPlatform,
  type TestPlatform,
} from '../fixture';
import { waitFor } from '../wait';

const CGROUP_CONTROLLERS = ['memory', 'cpu', 'cpuacct', 'pids', 'freezer'];

describe('wake right after hibernate (real gVisor)', () => {
  let p: TestPlatform;
  const made: string[] = [];

  before(async () => {
    p = await startTestPlatform();
  });
  after(async () => {
    for (const id of made) await p?.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p?.stop();
  });

  const act = async (id: string, action: string) => {
    const res = await p.api(`/v1/sandboxes/${id}/${action}`, { method: 'POST' });
    assert.equal(res.status, 200, `${action}: ${await res.text()}`);
  };
  const containersOf = (id: string) => p.runscContainers().filter((c) => ownerOf(c) === id);
  /** Cgroups the runtime made for containers of this sandbox (named by container id). */
  const cgroupsOf = (id: string) =>
    CGROUP_CONTROLLERS.flatMap((c) => {
      const dir = join('/sys/fs/cgroup', c);
      return existsSync(dir)
        ? readdirSync(dir)
            .filter((d) => ownerOf(d) === id)
            .map((d) => `${c}/${d}`)
        : [];
    });
  const mountsOf = (id: string) =>
    readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((l) => l.includes(join(p.home, 'sandboxes', id)));
  const count = async (id: string) =>
    Number((await exec(p, id, { cmd: 'cat', args: ['/tmp/count'] })).stdout);

  it('hibernate then wake then exec at once, ten times: each answers, and only the last container is left', async () => {
    const id = await createSandbox(p, { template: 'base' });
    made.push(id);
    await p.json(`/v1/sandboxes/${id}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', COUNTER] },
    });
    await exec(p, id, { cmd: 'sh', args: ['-c', 'echo kept > /root/file'] });
    await waitFor(async () => (await count(id)) > 0, { what: 'the counter to start' });
    for (let i = 0; i < 10; i++) {
      const before = await count(id);
      await act(id, 'hibernate');
      await act(id, 'wake');
      const r = await exec(p, id, { cmd: 'sh', args: ['-c', 'cat /root/file'] });
      assert.equal(r.stdout, 'kept\n', `cycle ${i}`);
      assert.ok((await count(id)) >= before, `cycle ${i}: the counter went on`);
    }
    await p.host.settle();
    const left = containersOf(id);
    assert.equal(left.length, 1, `one container left: ${left.join(', ')}`);
    const cgroups = cgroupsOf(id);
    assert.ok(cgroups.length > 0, 'the running container has cgroups');
    assert.deepEqual(
      cgroups.filter((c) => !c.endsWith(`/${left[0]}`)),
      [],
      'no cgroup of an old container is left',
    );
    // The disk of the running container, and nothing else.
    assert.equal(mountsOf(id).length, 1, mountsOf(id).join('\n'));
    const last = await count(id);
    await waitFor(async () => (await count(id)) > last, {
      what: 'the counter to run on after the last wake',
    });
  });

  it('a delete while the runtime still removes hibernated containers removes them all', async () => {
    const id = await createSandbox(p, { template: 'base' });
    await exec(p, id, { cmd: 'true' });
    for (let i = 0; i < 3; i++) {
      await act(id, 'hibernate');
      await act(id, 'wake');
    }
    await act(id, 'hibernate');
    // Removals of four containers are pending now; the delete comes before they end.
    await p.json(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p.host.settle();
    assert.deepEqual(containersOf(id), []);
    assert.deepEqual(cgroupsOf(id), []);
    assert.deepEqual(mountsOf(id), []);
    assert.ok(!existsSync(join(p.home, 'sandboxes', id)), 'its directory is gone');
  });

  it('a create and a wake restore with every CPU, then hold the sandbox to its cpu', async () => {
    const quotaOf = (id: string) => cpuQuotaOf(p.home, id);
    const two = await createSandbox(p, { template: 'base', cpu: 2 });
    made.push(two);
    const one = await createSandbox(p, { template: 'base', cpu: 1 });
    made.push(one);
    assert.equal(await quotaOf(two), 200_000, 'two CPUs after the create');
    assert.equal(await quotaOf(one), 100_000, 'one CPU after the create');
    await act(two, 'hibernate');
    await act(two, 'wake');
    assert.equal(await quotaOf(two), 200_000, 'two CPUs after the wake');
    assert.equal((await exec(p, two, { cmd: 'true' })).exit_code, 0);
  });

  it('a delete of a just-woken sandbox removes the new container and the old one', async () => {
    const id = await createSandbox(p, { template: 'base' });
    await act(id, 'hibernate');
    await act(id, 'wake');
    await p.json(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p.host.settle();
    assert.deepEqual(containersOf(id), []);
    assert.deepEqual(cgroupsOf(id), []);
    assert.deepEqual(mountsOf(id), []);
    assert.ok(!existsSync(join(p.home, 'sandboxes', id)));
  });
});
