import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CpuWeights } from '../../src/sandboxes/cpu-weights';
import type { HostContext } from '../../src/context';
import type { CpuWeight } from '../../src/runtime/driver';

/** Live sandboxes, their CPU time and egress bytes, as the test sets them; the weights given. */
function host() {
  const live = new Map<string, { busy: boolean; paused: boolean; cpuNs: number; net: number }>();
  const given: Array<[string, CpuWeight]> = [];
  let t = 0;
  const ctx = {
    registry: {
      ids: () => [...live.keys()],
      has: (id: string) => live.has(id),
      live: (id: string) => {
        const s = live.get(id)!;
        return { containerId: `${id}.c`, paused: s.paused, channel: { busy: s.busy } };
      },
    },
    driver: {
      cpuUsageNs: async (c: string) => live.get(c.slice(0, -2))?.cpuNs ?? null,
      setCpuWeight: async (c: string, w: CpuWeight) => void given.push([c, w]),
    },
    egress: {
      bytes: (id: string) => ({ rx: live.get(id)?.net ?? 0, tx: 0 }),
    },
  } as unknown as Pick<HostContext, 'driver' | 'registry' | 'egress'>;
  const weights = new CpuWeights(ctx, { idleSeconds: 10, idleCpuPercent: 15, now: () => t });
  const add = (id: string) => live.set(id, { busy: false, paused: false, cpuNs: 0, net: 0 });
  /** Moves the clock; each sandbox used `percent` of a CPU meanwhile. */
  const tick = async (ms: number, percent = 4) => {
    t += ms;
    for (const s of live.values()) s.cpuNs += ms * 1e6 * (percent / 100);
    await weights.sweep();
    await weights.stop(); // waits for the writes
  };
  return { live, given, weights, add, tick };
}

describe('CPU weight of idle sandboxes', () => {
  it('gives an idle sandbox the idle weight once, and its next request the normal weight', async () => {
    const h = host();
    h.add('a');
    await h.tick(5000);
    await h.tick(5000);
    assert.deepEqual(h.given, [], 'idle for 10 s only from the first pass');
    await h.tick(5000);
    await h.tick(5000);
    assert.deepEqual(h.given, [['a.c', 'idle']]);
    await h.tick(5000);
    assert.equal(h.given.length, 1, 'given once');
    h.weights.used('a');
    await h.weights.stop();
    assert.deepEqual(h.given.at(-1), ['a.c', 'normal']);
    h.weights.used('a');
    await h.tick(5000);
    assert.equal(h.given.length, 2, 'a sandbox known at its normal weight is not written again');
  });

  it('keeps the normal weight while a request or connection is open, egress flows, or CPU is used', async () => {
    const h = host();
    for (const id of ['busy', 'net', 'cpu', 'paused']) h.add(id);
    h.live.get('busy')!.busy = true;
    h.live.get('paused')!.paused = true;
    for (let i = 0; i < 6; i++) {
      h.live.get('net')!.net += 100;
      h.live.get('cpu')!.cpuNs += 5000 * 1e6 * 0.5;
      await h.tick(5000);
    }
    assert.deepEqual(h.given, []);
    h.live.get('busy')!.busy = false;
    for (let i = 0; i < 3; i++) {
      h.live.get('cpu')!.cpuNs += 5000 * 1e6 * 0.5;
      await h.tick(5000);
    }
    assert.deepEqual(h.given, [
      ['busy.c', 'idle'],
      ['net.c', 'idle'],
    ]);
  });

  it('gives the normal weight back to an idle sandbox whose processes start working', async () => {
    const h = host();
    h.add('a');
    for (let i = 0; i < 4; i++) await h.tick(5000);
    assert.deepEqual(h.given, [['a.c', 'idle']]);
    await h.tick(5000, 60);
    assert.deepEqual(h.given.at(-1), ['a.c', 'normal']);
  });

  it('writes the normal weight on the first request for a sandbox it does not know (after a restart)', async () => {
    const h = host();
    h.add('a');
    h.weights.used('a');
    await h.weights.stop();
    assert.deepEqual(h.given, [['a.c', 'normal']]);
  });

  it('forgets sandboxes that are gone, and does nothing with idleSeconds 0', async () => {
    const h = host();
    h.add('a');
    for (let i = 0; i < 4; i++) await h.tick(5000);
    h.live.delete('a');
    await h.tick(5000);
    h.add('a');
    h.weights.used('a');
    await h.weights.stop();
    assert.deepEqual(h.given.at(-1), ['a.c', 'normal'], 'a new sandbox of the same id is written');
    const off = new CpuWeights(
      {
        registry: { ids: () => [] },
        driver: {},
        egress: null,
      } as unknown as Pick<HostContext, 'driver' | 'registry' | 'egress'>,
      { idleSeconds: 0, idleCpuPercent: 15 },
    );
    off.start();
    off.used('x');
    await off.stop();
  });
});
