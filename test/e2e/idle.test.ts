import { after, before, describe, it } from 'node:test';
import { existsSync, readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { verifiedReceiver, type VerifiedReceiver } from '../webhook-receiver';
import { waitFor as waitForCondition, waitUntil } from '../wait';

interface ApiSandbox {
  id: string;
  state: string;
  stop_reason: string | null;
  persistent: boolean;
  idle_timeout_seconds: number;
  expires_at: string;
}

interface StateChanged {
  type: string;
  data: { sandbox: { id: string }; state: string; cause: { kind: string; detail: string } };
}

describe('TTL and idle hibernation with short timeouts (real gVisor)', () => {
  let p: TestPlatform;
  const get = (id: string) => p.json<ApiSandbox>(`/v1/sandboxes/${id}`);
  // sandbox.state_changed events, as a receiver on loopback got and verified them.
  const changes: StateChanged[] = [];
  let receiver: VerifiedReceiver | undefined;

  before(async () => {
    p = await startTestPlatform({ sweepIntervalMs: 200 });
    receiver = await verifiedReceiver(
      (url) =>
        p.json('/v1/webhooks', {
          method: 'POST',
          json: { url, events: ['sandbox.state_changed'] },
        }),
      (event) => changes.push(event as StateChanged),
    );
  });
  after(async () => {
    try {
      await p?.stop();
    } finally {
      receiver?.close();
    }
  });

  /** Polls until the sandbox is in state, or fails after ms. */
  const waitFor = async (id: string, state: string, ms: number) => {
    let last = '';
    return waitForCondition(
      async () => {
        const s = await get(id);
        last = s.state;
        return s.state === state && s;
      },
      { what: () => `${id} to be ${state} (it is ${last})`, timeoutMs: ms, intervalMs: 100 },
    );
  };

  it('an idle persistent sandbox hibernates after its idle timeout; a busy one does not', async () => {
    const idle = await createSandbox(p, {
      template: 'base',
      memory_mb: 128,
      persistent: true,
      idle_timeout_seconds: 1,
    });
    const busy = await createSandbox(p, {
      template: 'base',
      memory_mb: 128,
      persistent: true,
      idle_timeout_seconds: 1,
    });
    try {
      assert.equal((await get(idle)).persistent, true);
      assert.equal((await get(idle)).idle_timeout_seconds, 1);
      await exec(p, idle, { cmd: 'sh', args: ['-c', 'echo kept > /root/f'] });
      await p.json(`/v1/sandboxes/${busy}/processes`, {
        method: 'POST',
        json: { cmd: 'python3', args: ['-c', 'while True: pass'] },
      });
      await waitFor(idle, 'hibernated', 8000);
      const events = await p.json<{ items: Array<{ to_state: string; cause: string }> }>(
        `/v1/sandboxes/${idle}/events`,
      );
      assert.match(
        events.items.find((e) => e.to_state === 'hibernated')?.cause ?? '',
        /^hibernate \(idle for \d+ s\)$/,
      );
      // Its webhook says the idle sweep did it, not an API call or the system.
      const slept = await waitForCondition(
        () =>
          changes.find((e) => e.data.sandbox.id === idle && e.data.state === 'hibernated')?.data,
        { what: `a signed sandbox.state_changed (hibernated) webhook for ${idle}` },
      );
      assert.equal(slept.cause.kind, 'idle');
      assert.match(slept.cause.detail, /^hibernate \(idle for \d+ s\)$/);
      assert.equal('key_id' in slept.cause, false);
      // The busy one used its CPU the whole time: still running.
      assert.equal((await get(busy)).state, 'running');
      // Use wakes it, and the file is there.
      const r = await exec(p, idle, { cmd: 'cat', args: ['/root/f'] });
      assert.equal(r.stdout, 'kept\n');
      assert.equal((await get(busy)).state, 'running');
    } finally {
      await p.api(`/v1/sandboxes/${idle}`, { method: 'DELETE' });
      await p.api(`/v1/sandboxes/${busy}`, { method: 'DELETE' });
    }
  });

  /** Starts `sleep` in an exec stream; resolves once it runs, with the rest of the stream. */
  const streamSleep = async (id: string, seconds: number) => {
    const res = await p.api(`/v1/sandboxes/${id}/exec/stream`, {
      method: 'POST',
      json: { cmd: 'sleep', args: [String(seconds)] },
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.match(first, /"start"/);
    return (async () => {
      let rest = first;
      for (let r = await reader.read(); !r.done; r = await reader.read())
        rest += new TextDecoder().decode(r.value);
      return rest;
    })();
  };

  for (const kind of ['persistent', 'ttl'] as const) {
    it(`an open exec stream keeps a sandbox from ${kind === 'ttl' ? 'expiring' : 'idling'}`, async () => {
      const id = await createSandbox(
        p,
        kind === 'ttl'
          ? { template: 'base', memory_mb: 128, ttl_seconds: 2 }
          : { template: 'base', memory_mb: 128, persistent: true, idle_timeout_seconds: 2 },
      );
      try {
        // `sleep 6` in a stream: three times the timeout.
        const rest = await streamSleep(id, 6);
        assert.match(await rest, /"exit"/);
        const ended = new Date().toISOString();
        const events = await p.json<{ items: Array<{ at: string; to_state: string }> }>(
          `/v1/sandboxes/${id}/events`,
        );
        const early = events.items.filter(
          (e) => (e.to_state === 'hibernated' || e.to_state === 'stopping') && e.at < ended,
        );
        assert.deepEqual(early, [], 'nothing happened to it while the stream was open');
        // Once the stream is over, the timeout applies again.
        const later = await waitFor(id, kind === 'ttl' ? 'stopped' : 'hibernated', 10_000);
        if (kind === 'ttl') assert.equal(later.stop_reason, 'ttl_expired');
      } finally {
        await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
      }
    });
  }

  it('a persistent sandbox outlives its TTL; settings can be changed and are kept', async () => {
    const id = await createSandbox(p, {
      template: 'base',
      memory_mb: 128,
      ttl_seconds: 1,
      persistent: true,
      idle_timeout_seconds: 3600,
    });
    try {
      // Past its TTL, and swept since (the second sweep surely started after the wait).
      await waitUntil((await get(id)).expires_at, 'the TTL of the persistent sandbox to pass');
      await p.sweeper.sweep();
      await p.sweeper.sweep();
      assert.equal((await get(id)).state, 'running');
      const patched = await p.json<ApiSandbox>(`/v1/sandboxes/${id}`, {
        method: 'PATCH',
        json: { idle_timeout_seconds: 1 },
      });
      assert.equal(patched.idle_timeout_seconds, 1);
      await waitFor(id, 'hibernated', 8000);
      // Waking (implicitly) keeps the user's settings, never defaults.
      await exec(p, id, { cmd: 'true' });
      const woken = await get(id);
      assert.deepEqual(
        [woken.state, woken.persistent, woken.idle_timeout_seconds],
        ['running', true, 1],
      );
      const bad = await p.api('/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base', idle_timeout_seconds: 0 },
      });
      assert.equal(bad.status, 400);
    } finally {
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });
});

describe('idle sandboxes kept awake per host (real gVisor)', () => {
  let p: TestPlatform;
  const made: string[] = [];
  const state = async (id: string) => (await p.json<ApiSandbox>(`/v1/sandboxes/${id}`)).state;
  const waitState = (id: string, want: string) =>
    waitForCondition(async () => (await state(id)) === want, {
      what: `${id} to be ${want}`,
      timeoutMs: 20_000,
      intervalMs: 100,
    });

  before(async () => {
    p = await startTestPlatform({ sweepIntervalMs: 200, pressureIdleSeconds: 1, idleAwakeMax: 2 });
  });
  after(async () => {
    for (const id of made) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p?.stop();
  });

  it('hibernates the least recently used idle sandboxes beyond the limit, never a busy one; use wakes them', async () => {
    const make = async () => {
      const id = await createSandbox(p, { template: 'base', memory_mb: 128 });
      made.push(id);
      await exec(p, id, { cmd: 'sh', args: ['-c', 'echo kept > /root/f'] });
      return id;
    };
    // Least recently used first: a, then the busy one, then b, c, d.
    const a = await make();
    const busy = await make();
    await p.json(`/v1/sandboxes/${busy}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', 'while True: pass'] },
    });
    const [b, c, d] = [await make(), await make(), await make()];

    // Four quiet idle sandboxes, two allowed awake: a and b go, the busy one stays.
    await waitState(a, 'hibernated');
    await waitState(b, 'hibernated');
    await waitUntil(Date.now() + 2000, 'ten more sweeps');
    assert.deepEqual(await Promise.all([busy, c, d].map(state)), ['running', 'running', 'running']);
    const events = await p.json<{ items: Array<{ to_state: string; cause: string }> }>(
      `/v1/sandboxes/${a}/events`,
    );
    assert.match(
      events.items.find((e) => e.to_state === 'hibernated')?.cause ?? '',
      /more than 2 idle sandboxes awake on the host/,
    );

    // Use wakes a with its files; once it is idle again, c is now the least recently used.
    assert.equal((await exec(p, a, { cmd: 'cat', args: ['/root/f'] })).stdout, 'kept\n');
    await waitState(c, 'hibernated');
    assert.equal(await state(d), 'running');
    assert.equal(await state(busy), 'running');
  });
});

describe('idle sandboxes yield the CPU (real gVisor)', () => {
  let p: TestPlatform;
  const made: string[] = [];
  const v1 = existsSync('/sys/fs/cgroup/cpu');
  /** The sandbox's CPU weight in its cgroup: v1 cpu.shares, or v2 cpu.weight. */
  const weightOf = (id: string) =>
    readFileSync(
      v1 ? `/sys/fs/cgroup/cpu/${id}/cpu.shares` : `/sys/fs/cgroup/${id}/cpu.weight`,
      'utf8',
    ).trim();
  const [IDLE, NORMAL] = v1 ? ['16', '1024'] : ['2', '100'];

  before(async () => {
    p = await startTestPlatform({ idleCpuWeightSeconds: 1 });
  });
  after(async () => {
    for (const id of made) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p?.stop();
  });

  it('an idle sandbox gets a small CPU weight until its next request; a working one keeps its own', async () => {
    const make = async () => {
      const id = await createSandbox(p, { template: 'base', memory_mb: 128 });
      made.push(id);
      return id;
    };
    const busy = await make();
    await p.json(`/v1/sandboxes/${busy}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', 'while True: pass'] },
    });
    const quiet = await make();
    assert.equal(weightOf(quiet), NORMAL);
    await waitForCondition(() => weightOf(quiet) === IDLE, {
      what: () => `${quiet} to get the idle CPU weight (it has ${weightOf(quiet)})`,
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    // Idle for longer than the quiet one, but its process works: never lowered.
    assert.equal(weightOf(busy), NORMAL);
    // The next request gives it back its weight as it is sent. A stat costs the sandbox
    // too little CPU for a pass to see it working: only the request itself can do it.
    await p.json(`/v1/sandboxes/${quiet}/files/stat?path=/etc/hostname`);
    await waitForCondition(() => weightOf(quiet) === NORMAL, {
      what: () => `${quiet} to have its normal CPU weight back (it has ${weightOf(quiet)})`,
      timeoutMs: 1000,
      intervalMs: 20,
    });
    assert.equal((await exec(p, quiet, { cmd: 'echo', args: ['ok'] })).stdout, 'ok\n');
    // And it yields again once idle.
    await waitForCondition(() => weightOf(quiet) === IDLE, {
      what: () => `${quiet} to get the idle CPU weight again`,
      timeoutMs: 15_000,
      intervalMs: 100,
    });
  });
});
