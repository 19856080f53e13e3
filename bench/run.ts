/**
 * `npm run bench`: Warren's operations through the REST API, each beside the
 * same work done directly with runsc in the same run. Median and p95 of
 * repeated runs; the ratio compares medians.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestPlatform, RUNSC } from '../test/fixture';
import { createRows } from './create';
import { Direct } from './direct';
import { execRoundTripRow } from './exec';
import { fileRows } from './files';
import { harness } from './harness';
import { median, printTable, type Row } from './stats';
import { previewRows } from './preview';
import { forkRow, snapshotRows } from './snapshots';
import { officialBuildRows, templateRows } from './templates';

const extra: string[] = [];
/**
 * `BENCH_ONLY=lifecycle,fork` runs only those groups of rows (create, exec,
 * files, preview, lifecycle, fork, templates; `official`, the build of an
 * official template from the mirror, runs only when named).
 */
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const want = (group: string): boolean => !only || only.includes(group);

/** Each target whose rows ran, with the figure of this run and whether it is met. */
function targetLines(rows: Row[]): string[] {
  const row = (prefix: string) => rows.find((r) => r.name.startsWith(prefix));
  const ratio = (r: Row) => median(r.warren) / median(r.direct);
  const out: string[] = [];
  const line = (what: string, figure: string, met: boolean) =>
    out.push(`${what}: ${figure} (${met ? 'met' : 'not met'})`);
  for (const [prefix, max] of [
    ['create -> first exec (sequential)', 1.15],
    ['snapshot -> first exec', 1.2],
    ['wake -> first exec', 1.2],
    ['100 MB upload', 2],
    ['100 MB download', 2],
    ['template build: 3-step recipe', 3],
  ] as const) {
    const r = row(prefix);
    if (r) line(`${prefix} within ${max}x of direct`, `${ratio(r).toFixed(2)}x`, ratio(r) <= max);
  }
  const exec = row('exec round trip');
  const floor = row('spawn of `true` inside');
  if (exec && floor) {
    const over = median(exec.warren) - median(floor.warren);
    line(
      'exec round trip within 5 ms of the in-sandbox spawn floor',
      `${over.toFixed(1)} ms over`,
      over <= 5,
    );
  }
  const kept = row('preview request round trip');
  if (kept) {
    const added = median(kept.warren) - median(kept.direct);
    line('preview added latency under 1 ms', `${added.toFixed(2)} ms`, added < 1);
  }
  const download = row('100 MB download through a preview URL');
  if (download) {
    const share = median(download.direct) / median(download.warren);
    line('preview throughput at least 0.8 of direct', share.toFixed(2), share >= 0.8);
  }
  for (const [prefix, what, maxMs, digits] of [
    ['fork-tree of 16', 'fork-tree of 16 within 6 s', 6000, 1],
    [
      'template build: code-interpreter, package cache empty',
      'code-interpreter template build within 4 min',
      240_000,
      0,
    ],
  ] as const) {
    const r = row(prefix);
    if (r) line(what, `${(median(r.warren) / 1000).toFixed(digits)} s`, median(r.warren) <= maxMs);
  }
  return out;
}

async function main(): Promise<void> {
  const p = await startTestPlatform({ memoryBudgetMb: 16_000 });
  const direct = new Direct(mkdtempSync('/tmp/wb-'));
  const rows: Row[] = [];
  const cleanup: string[] = [];
  try {
    const h = harness(p, direct);
    const { createExec, deleteAll, destroyDirect } = h;

    // Warm both paths once (page cache, runsc binary).
    await deleteAll([(await createExec())[1]]);
    await destroyDirect([(await direct.restoreAndExec(p))[1]]);

    const { seq, conc, phases } = want('create')
      ? await createRows(h)
      : { seq: null as Row | null, conc: null as Row | null, phases: null };
    if (seq && conc) rows.push(seq, conc);
    if (phases) extra.push(phases);

    const [, sbx] = await createExec();
    cleanup.push(sbx);
    const [, dsbx] = await direct.restoreAndExec(p);
    const exec = want('exec') ? await execRoundTripRow(h, sbx, dsbx) : null;
    if (exec) rows.push(exec.row, exec.floor);

    if (want('files')) rows.push(...(await fileRows(h, sbx, dsbx)));

    // Preview URLs: the same app in a sandbox and on the host's loopback.
    if (want('preview')) {
      const preview = await previewRows(p);
      rows.push(...preview.rows);
      extra.push(...preview.notes);
    }

    // Snapshots, restores from them, hibernate and wake, fork-tree (issue 3).
    let live = dsbx;
    if (want('lifecycle')) {
      const snaps = await snapshotRows(h, sbx, dsbx);
      rows.push(...snaps.rows);
      extra.push(`snapshot size: ${(snaps.snapBytes / 1048576).toFixed(1)} MiB`);
      live = snaps.live;
    }

    if (want('fork')) {
      const fork = await forkRow(h, sbx, live);
      rows.push(fork.row);
      extra.push(`fork-tree parent pause: ${fork.parentPauseMs} ms`);
    }
    await destroyDirect([live]);

    if (want('templates')) {
      const tpl = await templateRows(
        (tp, image, template) => direct.restoreAndExec(tp, image, template),
        destroyDirect,
      );
      rows.push(...tpl.rows);
    }
    if (only?.includes('official')) rows.push(...(await officialBuildRows()));

    console.log(
      `\nWarren benchmark — runsc ${(await p.host.info()).runtime_version}, ${new Date().toISOString()}\n`,
    );
    printTable(rows);
    const targets = targetLines(rows);
    if (targets.length)
      console.log('\nTargets (issue "fast paths and density"):\n  ' + targets.join('\n  '));
    if (extra.length) console.log('\n' + extra.join('\n'));
    writeFileSync(
      join(p.context.config.templatesDir, '..', 'bench-latest.json'),
      JSON.stringify({ at: new Date().toISOString(), rows }, null, 2),
    );
  } finally {
    for (const id of cleanup)
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' }).catch(() => undefined);
    await p.stop();
    spawnSync(RUNSC, ['--root', direct.root, 'list']);
    rmSync(direct.dir, { recursive: true, force: true });
  }
}

await main();
