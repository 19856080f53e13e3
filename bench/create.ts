/** Create -> first exec rows: one sandbox at a time, and several at once. */
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
}: Harness): Promise<{ seq: Row; conc: Row }> {
  const seq: Row = {
    name: 'create -> first exec (sequential)',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc restore + runsc exec true',
  };
  for (let i = 0; i < SEQUENTIAL; i++) {
    const [w, id] = await createExec();
    seq.warren.push(w);
    await deleteAll([id]);
    const [d, did] = await direct.restoreAndExec(p);
    seq.direct.push(d);
    await destroyDirect([did]);
  }

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
  return { seq, conc };
}
