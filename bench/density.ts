/**
 * `npm run bench`, density: BENCH_DENSITY_N (default 200) idle `base`
 * sandboxes of the default 512 MiB, admitted on what they use, each
 * answering an exec afterwards; the host memory each costs (MemAvailable
 * before and after, and the sum of their memory cgroups); then create ->
 * first exec of the N+1st next to a direct runsc restore + exec on the same
 * loaded host. Runs alone: `node --import tsx bench/density.ts`.
 *
 * Idle sandboxes beyond WARREN_IDLE_AWAKE_MAX (8 per CPU) hibernate once idle
 * for WARREN_PRESSURE_IDLE_SECONDS (60 s), and an exec wakes them: the run
 * prints the states before and after the execs, their latencies, and the
 * host's idle CPU once everything has been idle past that.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { startTestPlatform } from '../test/fixture';
import { phaseMeans, phaseTotals } from './create';
import { Direct } from './direct';
import { harness } from './harness';
import { median, percentile, printTable, timed, type Row } from './stats';

const N = Number(process.env.BENCH_DENSITY_N ?? 200);
const LAST_RUNS = Number(process.env.BENCH_DENSITY_LAST_RUNS ?? 3);

const SETTLE_S = Number(process.env.BENCH_DENSITY_SETTLE_SECONDS ?? 80);

/** Busy and total CPU jiffies of the host (/proc/stat). */
function cpuTimes(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - f[4]!, total };
}

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
  const countStates = async () => {
    const states = new Map<string, number>();
    for (const id of ids) {
      const s = (await p.json<{ state: string }>(`/v1/sandboxes/${id}`)).state;
      states.set(s, (states.get(s) ?? 0) + 1);
    }
    return [...states].map(([s, n]) => `${n} ${s}`).join(', ');
  };
  const statesBefore = await countStates();
  let answered = 0;
  const execMs: number[] = [];
  for (const id of ids) {
    const [ms, r] = await timed(() =>
      p.json<{ stdout: string }>(`/v1/sandboxes/${id}/exec`, {
        method: 'POST',
        json: { cmd: 'echo', args: ['ok'] },
      }),
    );
    execMs.push(ms);
    if (r.stdout === 'ok\n') answered++;
  }
  const cap = await p.host.capacity();
  const usedMb = cap.memory_used_mb ?? NaN;
  const hostMb = before - availableMb();
  const statesAfter = await countStates();
  // All idle past WARREN_PRESSURE_IDLE_SECONDS: the sweep keeps WARREN_IDLE_AWAKE_MAX awake.
  await new Promise((r) => setTimeout(r, SETTLE_S * 1000));
  const statesSettled = await countStates();
  const c0 = cpuTimes();
  await new Promise((r) => setTimeout(r, 10_000));
  const c1 = cpuTimes();
  const busyPct = (100 * (c1.busy - c0.busy)) / (c1.total - c0.total);

  const row: Row = {
    name: `create -> first exec, sandbox ${N + 1} of ${N + 1}`,
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc restore + runsc exec true, same host',
  };
  const phasesBefore = await phaseTotals(p);
  for (let i = 0; i < LAST_RUNS; i++) {
    const [ms, id] = await h.createExec();
    row.warren.push(ms);
    await h.deleteAll([id]);
    const [d, did] = await direct.restoreAndExec(p);
    row.direct.push(d);
    await h.destroyDirect([did]);
  }
  const phases = phaseMeans(phasesBefore, await phaseTotals(p));
  console.log(
    `\nWarren density benchmark — ${N} idle base sandboxes, ${new Date().toISOString()}\n`,
  );
  printTable([row]);
  console.log(
    [
      '',
      `${N} sandboxes made in ${madeS.toFixed(0)} s; states then: ${statesBefore}`,
      `${answered} of ${N} answered an exec afterwards (median ${median(execMs).toFixed(0)} ms, p95 ${percentile(execMs, 95).toFixed(0)} ms, a wake included where it slept); states then: ${statesAfter}`,
      `after ${SETTLE_S} s idle: ${statesSettled}; host CPU busy over the next 10 s: ${busyPct.toFixed(1)}%`,
      `host memory (MemAvailable) taken: ${hostMb.toFixed(0)} MiB, ${(hostMb / N).toFixed(1)} MiB per sandbox`,
      `memory cgroups of the sandboxes: ${usedMb} MiB, ${(usedMb / N).toFixed(1)} MiB per sandbox; memory_mb admitted: ${cap.memory_reserved_mb} MiB against a budget of ${cap.memory_budget_mb} MiB (overcommit ${cap.memory_overcommit})`,
      `N+1st create -> first exec median ${median(row.warren).toFixed(0)} ms, direct ${median(row.direct).toFixed(0)} ms`,
      `its phases on the host, mean of ${LAST_RUNS}: ${phases}`,
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
