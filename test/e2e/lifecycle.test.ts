import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { COUNTER, createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { ownerOf } from '../../packages/host-agent/src/sandboxes/runtime-ids';
import { waitFor, waitUntil } from '../wait';

describe('pause, resume, hibernate, wake (real gVisor)', () => {
  let p: TestPlatform;
  let id: string;
  const count = async () =>
    Number((await exec(p, id, { cmd: 'cat', args: ['/tmp/count'] })).stdout);
  const act = (action: string) => p.api(`/v1/sandboxes/${id}/${action}`, { method: 'POST' });
  const state = async () => (await p.json(`/v1/sandboxes/${id}`)).state as string;
  const containersOf = (sbx: string) => p.runscContainers().filter((c) => ownerOf(c) === sbx);
  /** Waits until the background counter has gone past `than`. */
  const countsPast = (than: number, what: string) =>
    waitFor(async () => (await count()) > than, { what });

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
    await countsPast(0, 'the counter to start');
  });
  after(async () => {
    await p?.stop();
  });

  it('pause freezes the CPU; resume continues where it stopped', async () => {
    const before = await count();
    assert.ok(before > 0);
    assert.equal((await act('pause')).status, 200);
    const pausedAt = Date.now();
    assert.equal(await state(), 'paused');
    // The time spent paused is what is measured: 3 s at 20 increments a second
    // would be about 60 if the counter were not frozen.
    await waitUntil(pausedAt + 3000, '3 s to pass with the sandbox paused');
    assert.equal((await act('resume')).status, 200);
    const after = await count();
    // Frozen, it moved only around the calls.
    assert.ok(after - before < 30, `counter moved ${after - before} while paused`);
    await countsPast(after, 'the counter to count again after resume');
  });

  /**
   * What the sandbox holds on the host: runtime processes, mounts, files in its
   * work directory, and open descriptors of the platform's process.
   */
  const footprint = () => {
    const processes = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(p.home);
        } catch {
          return false;
        }
      }).length;
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((l) => l.includes(p.home)).length;
    const files = readdirSync(join(p.home, 'sandboxes', id), { recursive: true })
      .map(String)
      .sort();
    const fds = readdirSync('/proc/self/fd').length;
    return { processes, mounts, files, fds };
  };

  /**
   * The steady footprint now, compared with `base` for growth: descriptors of
   * the platform's process may also close meanwhile (idle keep-alive sockets
   * of its HTTP clients), and a runtime process counted in `base` may have
   * been exiting then, so fewer of either than in `base` count as the same.
   */
  const grownSince = async (base: ReturnType<typeof footprint>) => {
    const now = await steadyFootprint();
    return {
      ...now,
      processes: Math.max(now.processes, base.processes),
      fds: Math.max(now.fds, base.fds),
    };
  };

  /**
   * The footprint once the runtime processes of the steps before have
   * exited: the same process count three times 200 ms apart (at most 10 s).
   */
  const steadyFootprint = async () => {
    let last = footprint();
    for (let same = 0, i = 0; same < 2 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 200));
      const now = footprint();
      same = now.processes === last.processes ? same + 1 : 0;
      last = now;
    }
    return last;
  };

  /** Five files with known contents; checks they are all intact. */
  const CHECKSUMS = 'cd /root/keep && sha256sum -c sums >/dev/null && echo intact';
  const writeFiles = () =>
    exec(p, id, {
      cmd: 'sh',
      args: [
        '-c',
        'mkdir -p /root/keep && cd /root/keep && for i in 1 2 3 4 5; do head -c $((i * 100000)) /dev/urandom > f$i; done && sha256sum f* > sums',
      ],
    });

  it('100 pause/resume cycles: the process keeps counting, files intact, nothing leaks', async () => {
    await writeFiles();
    // The start is taken once the runtime work of the steps before has ended.
    await p.host.settle();
    const start = await steadyFootprint();
    let last = await count();
    for (let i = 0; i < 100; i++) {
      assert.equal((await act('pause')).status, 200);
      assert.equal((await act('resume')).status, 200);
      if (i % 25 === 24) {
        const now = await count();
        assert.ok(now > last, `still counting after ${i + 1} cycles: ${last} -> ${now}`);
        last = now;
      }
    }
    assert.equal((await exec(p, id, { cmd: 'sh', args: ['-c', CHECKSUMS] })).stdout, 'intact\n');
    assert.equal((await exec(p, id, { cmd: 'cat', args: ['/root/data.txt'] })).stdout, 'precious');
    assert.deepEqual(await grownSince(start), start);
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
      await p.host.settle();
      assert.deepEqual(containersOf(id), [], 'nothing of it runs');
      assert.equal((await p.json('/v1/health')).hosts[0].memory_reserved_mb, reserved - 512);
      const woke = await act('wake');
      assert.equal(woke.status, 200, await woke.text());
      assert.equal(await state(), 'running');
      const after = await count();
      assert.ok(after >= before, `counter continued: ${before} -> ${after}`);
      await countsPast(after, `the background process to run on after wake ${cycle + 1}`);
    }
    const r = await exec(p, id, { cmd: 'sh', args: ['-c', 'cat /root/data.txt; echo " $KEEP"'] });
    assert.equal(r.stdout, 'precious me\n');
    const procs = (await p.json(`/v1/sandboxes/${id}/processes`)).items as Array<{ state: string }>;
    assert.ok(
      procs.some((x) => x.state === 'running'),
      'the process table survived',
    );
  });

  it('20 hibernate/wake cycles: the process keeps counting, files intact, nothing leaks', async () => {
    let first: ReturnType<typeof footprint> | undefined;
    for (let cycle = 0; cycle < 20; cycle++) {
      const before = await count();
      assert.equal((await act('hibernate')).status, 200);
      assert.equal((await act('wake')).status, 200);
      const after = await count();
      assert.ok(after >= before, `cycle ${cycle}: counter continued: ${before} -> ${after}`);
      await p.host.settle();
      // The first cycle may leave what every later one reuses; after that nothing grows.
      if (cycle === 0) first = await steadyFootprint();
    }
    await countsPast(await count(), 'the background process to run on after 20 cycles');
    assert.equal((await exec(p, id, { cmd: 'sh', args: ['-c', CHECKSUMS] })).stdout, 'intact\n');
    await p.host.settle();
    // A process of the last cycle may still be exiting on a loaded machine: a leak stays.
    const deadline = Date.now() + 10_000;
    while (!isDeepStrictEqual(await grownSince(first!), first) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(await grownSince(first!), first);
    // One container: the last wake's (each wake restores into a new one).
    assert.equal(p.runscContainers().length, 1);
    assert.deepEqual(containersOf(id), p.runscContainers());
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
    await p.host.settle();
    assert.ok(!existsSync(join(p.home, 'sandboxes', id)));
    assert.deepEqual(await code(await act('resume')), [409, 'INVALID_STATE']);
    assert.deepEqual(
      await code(await p.api('/v1/sandboxes/sbx_nothere0000000/wake', { method: 'POST' })),
      [404, 'SANDBOX_NOT_FOUND'],
    );
  });
});
