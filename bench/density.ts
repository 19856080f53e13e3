/**
 * `npm run bench`, density: BENCH_DENSITY_N (default 200) idle `base`
 * sandboxes of the default 512 MiB, admitted on what they use, each
 * answering an exec afterwards; the host memory each costs (MemAvailable
 * before and after, and the sum of their memory cgroups); then create ->
 * first exec of the N+1st next to a direct runsc restore + exec on the same
 * loaded host. Runs alone: `node --import tsx bench/density.ts`.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { startTestPlatform } from '../test/fixture';
import { Direct } from './direct';
import { harness } from './harness';
import { median, printTable, type Row } from './stats';

const N = Number(process.env.BENCH_DENSITY_N ?? 200);
const LAST_RUNS = Number(process.env.BENCH_DENSITY_LAST_RUNS ?? 3);

const availableMb = () =>
  Number(/^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) / 1024;

const p = await startTestPlatform();
const direct = new Direct(mkdtempSync('/tmp/wdn-'));
const ids: string[] = [];
try {
  const h = harness(p, direct);
  const load = loadavg()[0]!;
  const before = availableMb();
  const started = performance.now();
  for (let i = 0; i < N; i++) {
    const [, id] = await h.createExec();
    ids.push(id);
    if ((i + 1) % 25 === 0) console.error(`[density] ${i + 1} sandboxes`);
  }
  const madeS = (performance.now() - started) / 1000;
  let answered = 0;
  for (const id of ids) {
    const r = await p.json<{ stdout: string }>(`/v1/sandboxes/${id}/exec`, {
      method: 'POST',
      json: { cmd: 'echo', args: ['ok'] },
    });
    if (r.stdout === 'ok\n') answered++;
  }
  const cap = await p.host.capacity();
  const usedMb = cap.memory_used_mb ?? NaN;
  const hostMb = before - availableMb();
  const states = new Map<string, number>();
  for (const id of ids) {
    const s = (await p.json<{ state: string }>(`/v1/sandboxes/${id}`)).state;
    states.set(s, (states.get(s) ?? 0) + 1);
  }

  const row: Row = {
    name: `create -> first exec, sandbox ${N + 1} of ${N + 1}`,
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc restore + runsc exec true, same host',
  };
  for (let i = 0; i < LAST_RUNS; i++) {
    const [ms, id] = await h.createExec();
    row.warren.push(ms);
    await h.deleteAll([id]);
    const [d, did] = await direct.restoreAndExec(p);
    row.direct.push(d);
    await h.destroyDirect([did]);
  }
  console.log(
    `\nWarren density benchmark — ${N} idle base sandboxes, ${new Date().toISOString()}\n`,
  );
  printTable([row]);
  console.log(
    [
      '',
      `${N} sandboxes made in ${madeS.toFixed(0)} s; ${answered} of ${N} answered an exec afterwards; states: ${[...states].map(([s, n]) => `${n} ${s}`).join(', ')}`,
      `host memory (MemAvailable) taken: ${hostMb.toFixed(0)} MiB, ${(hostMb / N).toFixed(1)} MiB per sandbox`,
      `memory cgroups of the sandboxes: ${usedMb} MiB, ${(usedMb / N).toFixed(1)} MiB per sandbox; memory_mb admitted: ${cap.memory_reserved_mb} MiB against a budget of ${cap.memory_budget_mb} MiB (overcommit ${cap.memory_overcommit})`,
      `N+1st create -> first exec median ${median(row.warren).toFixed(0)} ms, direct ${median(row.direct).toFixed(0)} ms`,
      `host load average (1 min): ${load.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end`,
    ].join('\n'),
  );
} finally {
  for (const id of ids)
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' }).catch(() => undefined);
  await p.host.settle().catch(() => undefined);
  await p.stop();
  rmSync(direct.dir, { recursive: true, force: true });
}
