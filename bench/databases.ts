/**
 * `npm run bench`, managed PostgreSQL: Warren's database operations through
 * the REST API and the front door, each beside the same work done directly
 * (runsc by hand, cp, tar) in the same run; median and p95 of repeated runs.
 * Then pgbench throughput, and how much committed data a lost disk costs.
 * Every database made is deleted at the end, also after a failure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { startTestPlatform } from '../test/fixture';
import { progress, type DbBench } from './databases/common';
import { archiveRow } from './databases/archive';
import { copyRows } from './databases/copies';
import { DirectPostgres } from './databases/direct-pg';
import { createRow, wakeRow } from './databases/latency';
import { pgbenchRows, printTps, type TpsResult } from './databases/pgbench';
import { riskNotes } from './databases/risk';
import { Direct } from './direct';
import { now, percentile, printTable, type Row } from './stats';

const started = now();
const loadAtStart = loadavg()[0]!;
const p = await startTestPlatform({ dbPort: 0, memoryBudgetMb: 16_000, dbWatchIntervalMs: 200 });
const direct = new Direct(mkdtempSync('/tmp/wdb-'));
const b: DbBench = { p, direct: new DirectPostgres(p, direct), made: new Set(), notes: [] };
const rows: Row[] = [];
const failed: string[] = [];
let tps: { results: TpsResult[]; title: string } | null = null;
let risk: string[] = [];

/** `BENCH_DB_ONLY=create,wake` runs only those groups (create, wake, pgbench, archive, copies, risk). */
const only = process.env.BENCH_DB_ONLY?.split(',').map((s) => s.trim());

/** One group of rows; a failure is reported and the next group runs. */
async function section(name: string, fn: () => Promise<void>): Promise<void> {
  if (only && !only.includes(name)) return;
  progress(name);
  try {
    await fn();
  } catch (err) {
    failed.push(`${name}: ${(err as Error).stack ?? String(err)}`);
    await b.direct.destroyAll();
  }
}

try {
  let create: Row | null = null;
  let wake: Row | null = null;
  await section('create', async () => void rows.push((create = await createRow(b))));
  await section('wake', async () => void rows.push((wake = await wakeRow(b))));
  await section('pgbench', async () => void (tps = await pgbenchRows(b)));
  await section('archive', async () => void rows.push(await archiveRow(b)));
  await section('copies', () => copyRows(b, rows));
  await section('risk', async () => void (risk = await riskNotes(b)));

  console.log(
    `\nWarren databases benchmark — PostgreSQL 17, runsc ${(await p.host.info()).runtime_version}, ${new Date().toISOString()}\n`,
  );
  printTable(rows);
  const result = tps as { results: TpsResult[]; title: string } | null;
  if (result) printTps(result.title, result.results);

  const ms = (x: number) => `${x.toFixed(0)} ms`;
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const targets: string[] = [];
  const c = create as Row | null;
  if (c) {
    const p50 = percentile(c.warren, 50);
    targets.push(`create -> first query p50 <= 3 s: ${ms(p50)} (${met(p50 <= 3000)})`);
  }
  const w = wake as Row | null;
  if (w) {
    const [p50, p95] = [percentile(w.warren, 50), percentile(w.warren, 95)];
    targets.push(`wake-on-connect -> first query p50 <= 500 ms: ${ms(p50)} (${met(p50 <= 500)})`);
    targets.push(`wake-on-connect -> first query p95 <= 1.5 s: ${ms(p95)} (${met(p95 <= 1500)})`);
  }
  for (const r of rows.filter((r) => r.name.startsWith('branch'))) {
    const p50 = percentile(r.warren, 50);
    const size = /\((.*)\)/.exec(r.name)?.[1] ?? '';
    targets.push(`branch -> first query p50 <= 2 s (${size}): ${ms(p50)} (${met(p50 <= 2000)})`);
  }
  for (const r of result?.results ?? [])
    if (r.path.startsWith('front door'))
      targets.push(
        `pgbench ${r.mode} front door / in-sandbox >= 0.7: ${r.ratio.toFixed(2)} (${met(r.ratio >= 0.7)})`,
      );
  console.log('\nTargets:\n  ' + targets.join('\n  '));
  if (b.notes.length) console.log('\n' + b.notes.join('\n'));
  if (risk.length) console.log('\n' + risk.join('\n'));
  console.log(
    `\nwhole run: ${((now() - started) / 1000).toFixed(0)} s; host load average (1 min) ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end`,
  );
  writeFileSync(
    join(p.context.config.templatesDir, '..', 'bench-databases-latest.json'),
    JSON.stringify(
      { at: new Date().toISOString(), rows, tps: result, notes: b.notes, risk },
      null,
      2,
    ),
  );
} finally {
  for (const id of b.made)
    await p.api(`/v1/databases/${id}`, { method: 'DELETE' }).catch(() => undefined);
  await b.direct.destroyAll();
  await p.stop();
  rmSync(direct.dir, { recursive: true, force: true });
}
if (failed.length) {
  console.error(`\nFailed:\n${failed.join('\n')}`);
  process.exitCode = 1;
}
