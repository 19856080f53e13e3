import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { COUNTER, createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';

describe('pause, resume, hibernate, wake (real gVisor)', () => {
  let p: TestPlatform;
  let id: string;
  const count = async () =>
    Number((await exec(p, id, { cmd: 'cat', args: ['/tmp/count'] })).stdout);
  const act = (action: string) => p.api(`/v1/sandboxes/${id}/${action}`, { method: 'POST' });
  const state = async () => (await p.json(`/v1/sandboxes/${id}`)).state as string;

  before(async () => {
    p = await startTestPlatform();
    id = await createSandbox(p, { template: 'base', env: { KEEP: 'me' } });
    await p.json(`/v1/sandboxes/${id}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', COUNTER] },
    });
    await p.api(`/v1/sandboxes/${id}/files?path=/root/data.txt`, {
      method: 'PUT',
      body: 'precious',
    });
    await new Promise((r) => setTimeout(r, 300));
  });
  after(async () => {
    await p?.stop();
  });

  it('pause freezes the CPU; resume continues where it stopped', async () => {
    const before = await count();
    assert.ok(before > 0);
    assert.equal((await act('pause')).status, 200);
    assert.equal(await state(), 'paused');
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal((await act('resume')).status, 200);
    const after = await count();
    // 3 s at 20 increments a second would be about 60; frozen, it moved only around the calls.
    assert.ok(after - before < 30, `counter moved ${after - before} while paused`);
    await new Promise((r) => setTimeout(r, 300));
    assert.ok((await count()) > after, 'counts again after resume');
  });

  it('survives repeated pause/resume cycles', async () => {
    for (let i = 0; i < 20; i++) {
      assert.equal((await act('pause')).status, 200);
      assert.equal((await act('resume')).status, 200);
    }
    const a = await count();
    await new Promise((r) => setTimeout(r, 200));
    assert.ok((await count()) > a);
    assert.equal((await exec(p, id, { cmd: 'cat', args: ['/root/data.txt'] })).stdout, 'precious');
  });

  it('an exec on a paused sandbox resumes it implicitly', async () => {
    await act('pause');
    const r = await exec(p, id, { cmd: 'echo', args: ['hi'] });
    assert.equal(r.stdout, 'hi\n');
    assert.equal(await state(), 'running');
    const events = (await p.json(`/v1/sandboxes/${id}/events`)).items as Array<{
      to_state: string;
      cause: string;
    }>;
    assert.deepEqual(events.at(-1), {
      ...events.at(-1),
      to_state: 'running',
      cause: 'resume (implicit, on use)',
    });
  });

  it('hibernate frees the host; wake restores processes, memory and files', async () => {
    for (let cycle = 0; cycle < 3; cycle++) {
      const before = await count();
      const reserved = (await p.json('/v1/health')).hosts[0].memory_reserved_mb as number;
      assert.equal((await act('hibernate')).status, 200);
      assert.equal(await state(), 'hibernated');
      await p.context.host.settle();
      assert.ok(!p.runscContainers().includes(id), 'nothing of it runs');
      assert.equal((await p.json('/v1/health')).hosts[0].memory_reserved_mb, reserved - 512);
      const woke = await act('wake');
      assert.equal(woke.status, 200, await woke.text());
      assert.equal(await state(), 'running');
      const after = await count();
      assert.ok(after >= before, `counter continued: ${before} -> ${after}`);
      await new Promise((r) => setTimeout(r, 200));
      assert.ok((await count()) > after, 'the background process still runs');
    }
    const r = await exec(p, id, { cmd: 'sh', args: ['-c', 'cat /root/data.txt; echo " $KEEP"'] });
    assert.equal(r.stdout, 'precious me\n');
    const procs = (await p.json(`/v1/sandboxes/${id}/processes`)).items as Array<{ state: string }>;
    assert.ok(
      procs.some((x) => x.state === 'running'),
      'the process table survived',
    );
  });

  it('a file read wakes a hibernated sandbox implicitly', async () => {
    await act('hibernate');
    const res = await p.api(`/v1/sandboxes/${id}/files?path=/root/data.txt`);
    assert.equal(await res.text(), 'precious');
    assert.equal(await state(), 'running');
  });

  it('transitions from the wrong state are typed errors', async () => {
    const code = async (res: Response) => [
      res.status,
      ((await res.json()) as { error: { code: string } }).error.code,
    ];
    assert.deepEqual(await code(await act('wake')), [409, 'INVALID_STATE']);
    assert.deepEqual(await code(await act('resume')), [409, 'INVALID_STATE']);
    await act('hibernate');
    assert.deepEqual(await code(await act('pause')), [409, 'INVALID_STATE']);
    // Deleting a hibernated sandbox removes its image too.
    await p.json(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p.context.host.settle();
    assert.ok(!existsSync(join(p.home, 'sandboxes', id)));
    assert.deepEqual(await code(await act('resume')), [409, 'INVALID_STATE']);
    assert.deepEqual(
      await code(await p.api('/v1/sandboxes/sbx_nothere0000000/wake', { method: 'POST' })),
      [404, 'SANDBOX_NOT_FOUND'],
    );
  });
});
