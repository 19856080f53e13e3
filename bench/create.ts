/**
 * Create -> first exec rows: one sandbox at a time, and several at once; and
 * where the sequential creates' time went on the host, from the platform's
 * phase histogram (warren_sandbox_create_phase_duration_seconds).
 */
import type { TestPlatform } from '../test/fixture';
import type { Harness } from './harness';
import type { Row } from './stats';

const SEQUENTIAL = Number(process.env.BENCH_CREATES ?? 10);
const CONCURRENT = 8;

export async function createRows({
  p,
  direct,
  createExec,
  deleteAll,
  destroyDirect,
}: Harness): Promise<{ seq: Row; conc: Row; phases: string }> {
  const seq: Row = {
    name: 'create -> first exec (sequential)',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc restore + runsc exec true',
  };
  const before = await phaseTotals(p);
  for (let i = 0; i < SEQUENTIAL; i++) {
    const [w, id] = await createExec();
    seq.warren.push(w);
    await deleteAll([id]);
    const [d, did] = await direct.restoreAndExec(p);
    seq.direct.push(d);
    await destroyDirect([did]);
  }

  const phases = `create phases on the host, mean of the ${SEQUENTIAL} sequential creates: ${phaseMeans(before, await phaseTotals(p))}`;

  const conc: Row = {
    name: `create -> first exec (${CONCURRENT} concurrent)`,
    unit: 'ms',
    warren: [],
    direct: [],
    directName: `${CONCURRENT} x (runsc restore + exec) at once`,
  };
  for (let round = 0; round < 2; round++) {
    const w = await Promise.all(Array.from({ length: CONCURRENT }, createExec));
    conc.warren.push(...w.map((x) => x[0]));
    await deleteAll(w.map((x) => x[1]));
    const d = await Promise.all(Array.from({ length: CONCURRENT }, () => direct.restoreAndExec(p)));
    conc.direct.push(...d.map((x) => x[0]));
    await destroyDirect(d.map((x) => x[1]));
  }
  return { seq, conc, phases };
}

type PhaseTotals = Map<string, { sum: number; count: number }>;

/** Sum and count of each phase of the create phase histogram, from /metrics. */
export async function phaseTotals(p: TestPlatform): Promise<PhaseTotals> {
  const text = await (await p.api('/metrics')).text();
  const out = new Map<string, { sum: number; count: number }>();
  const re = /^warren_sandbox_create_phase_duration_seconds_(sum|count)\{phase="(\w+)"\} (\S+)$/gm;
  for (const [, kind, phase, v] of text.matchAll(re)) {
    const t = out.get(phase!) ?? { sum: 0, count: 0 };
    t[kind as 'sum' | 'count'] = Number(v);
    out.set(phase!, t);
  }
  return out;
}

/** Mean of each phase over the creates between two readings of phaseTotals. */
export function phaseMeans(before: PhaseTotals, after: PhaseTotals): string {
  return [...after]
    .map(([phase, t]) => {
      const was = before.get(phase) ?? { sum: 0, count: 0 };
      return `${phase} ${(((t.sum - was.sum) / (t.count - was.count)) * 1000).toFixed(1)} ms`;
    })
    .join(', ');
}
