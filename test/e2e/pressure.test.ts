/**
 * Admission on measured use and the memory pressure ladder, on real runsc,
 * with a tiny budget: every sandbox counts at least WARREN_MEMORY_START_MB
 * (200 MiB here, more than an idle `base` sandbox uses), so a budget of
 * 500 MiB holds two. A third create hibernates the least recently used idle
 * one, which wakes on use with its files (hibernating another); when every
 * sandbox is busy nothing can be freed and the create is refused.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import parse from 'parse-prometheus-text-format';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';

/** The counters of GET /metrics a refusal moves, by their labels. */
const REFUSALS = [
  ['warren_admission_refusals_total', { operation: 'create' }],
  ['warren_admission_refusals_total', { operation: 'wake' }],
  ['warren_sandbox_creates_total', { source: 'template', result: 'INSUFFICIENT_CAPACITY' }],
  ['warren_sandbox_creates_total', { source: 'template', result: 'ok' }],
] as const;

describe('memory pressure ladder (real gVisor)', () => {
  let p: TestPlatform;
  const made: string[] = [];

  before(async () => {
    p = await startTestPlatform({
      memoryBudgetMb: 500,
      memoryStartMb: 200,
      memoryOvercommit: 8,
      pressureIdleSeconds: 0,
    });
  });
  after(async () => {
    for (const id of made) await p?.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p?.stop();
  });

  /** The REFUSALS counters now (0 for a series not there yet). */
  const counters = async () => {
    const res = await p.api('/metrics');
    assert.equal(res.status, 200);
    const families = parse(await res.text());
    return REFUSALS.map(([name, labels]) => {
      const family = families.find((f) => f.name === name);
      const sample = family?.metrics.find((m) =>
        Object.entries(labels).every(([k, v]) => m.labels?.[k] === v),
      );
      return Number(sample?.value ?? 0);
    });
  };
  const state = async (id: string) => (await p.json(`/v1/sandboxes/${id}`)).state as string;
  const make = async (file: string) => {
    const id = await createSandbox(p, { template: 'base' });
    made.push(id);
    await exec(p, id, { cmd: 'sh', args: ['-c', `echo ${file} > /root/mine`] });
    return id;
  };

  it('makes room by hibernating the least recently used idle sandbox; it wakes with its files', async () => {
    const start = await counters();
    const a = await make('a');
    const b = await make('b');
    // a is the least recently used now.
    const c = await make('c');
    assert.equal(await state(a), 'hibernated');
    assert.equal(await state(b), 'running');
    assert.equal(await state(c), 'running');
    const events = (await p.json(`/v1/sandboxes/${a}/events`)).items as Array<{ cause: string }>;
    assert.equal(events.at(-1)?.cause, 'hibernate (memory pressure)');

    // Using a wakes it, which makes room in turn: b is the least recently used of the others.
    const r = await exec(p, a, { cmd: 'cat', args: ['/root/mine'] });
    assert.equal(r.stdout, 'a\n');
    // c's create and a's wake were each refused first, then admitted once room was made.
    const [createRefusals, wakeRefusals, refusedCreates, okCreates] = (await counters()).map(
      (n, i) => n - start[i]!,
    );
    assert.ok(createRefusals! >= 1, `${createRefusals} create refusals`);
    assert.ok(wakeRefusals! >= 1, `${wakeRefusals} wake refusals`);
    // Each refused create is a create with that result too; a, b and c were made.
    assert.deepEqual([refusedCreates, okCreates], [createRefusals, 3]);
    assert.equal(await state(a), 'running');
    assert.equal(await state(b), 'hibernated');
    assert.equal(await state(c), 'running');
    assert.equal((await exec(p, b, { cmd: 'cat', args: ['/root/mine'] })).stdout, 'b\n');
  });

  it('refuses with INSUFFICIENT_CAPACITY when no sandbox is idle, and hibernates nothing', async () => {
    const running: string[] = [];
    for (const id of made) if ((await state(id)) === 'running') running.push(id);
    assert.equal(running.length, 2);
    // A request open on each keeps it busy: none may be hibernated.
    const streams = running.map((id) => {
      const ctl = new AbortController();
      const res = p.api(`/v1/sandboxes/${id}/exec/stream`, {
        method: 'POST',
        json: { cmd: 'sleep', args: ['600'] },
        signal: ctl.signal,
      });
      return { ctl, res };
    });
    try {
      for (const s of streams) assert.equal((await s.res).status, 200);
      const before = await counters();
      const refused = await p.api('/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base' },
      });
      assert.equal(refused.status, 503);
      const body = (await refused.json()) as { error: { code: string } };
      assert.equal(body.error.code, 'INSUFFICIENT_CAPACITY');
      // The host refused once (nothing idle to free, so no second try): counted as a create refusal.
      const after = await counters();
      assert.deepEqual(
        after.map((n, i) => n - before[i]!),
        [1, 0, 1, 0],
        'admission refusals {create, wake}, creates {INSUFFICIENT_CAPACITY, ok}',
      );
      for (const id of running) assert.equal(await state(id), 'running');
      const items = (await p.json('/v1/sandboxes')).items as Array<{ id: string }>;
      assert.equal(items.length, made.length, 'no record of the refused sandbox');
    } finally {
      for (const s of streams) s.ctl.abort();
      await Promise.allSettled(streams.map((s) => s.res));
    }
  });
});
