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
import { templateRows } from './templates';

const extra: string[] = [];
/** `BENCH_ONLY=lifecycle,fork` runs only those groups of rows (create, exec, files, preview, lifecycle, fork, templates). */
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const want = (group: string): boolean => !only || only.includes(group);
const fromSnapRatio: number[][] = [];

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

    const { seq, conc } = want('create')
      ? await createRows(h)
      : { seq: null as Row | null, conc: null as Row | null };
    if (seq && conc) rows.push(seq, conc);

    const [, sbx] = await createExec();
    cleanup.push(sbx);
    const [, dsbx] = await direct.restoreAndExec(p);
    const execRow = want('exec') ? await execRoundTripRow(h, sbx, dsbx) : null;
    if (execRow) rows.push(execRow);

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
      fromSnapRatio.push(snaps.fromSnap.warren, snaps.fromSnap.direct);
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
      extra.push(
        `user-built template create -> first exec median within 1.3x of direct restore: ${(median(tpl.createRow.warren) / median(tpl.createRow.direct)).toFixed(2)}x`,
      );
    }

    console.log(
      `\nWarren benchmark — runsc ${(await p.host.info()).runtime_version}, ${new Date().toISOString()}\n`,
    );
    printTable(rows);
    const targets: string[] = [];
    if (seq)
      targets.push(
        `create -> first exec median within 1.3x of direct restore: ${(median(seq.warren) / median(seq.direct)).toFixed(2)}x`,
      );
    if (execRow)
      targets.push(
        `exec round trip median at least 3x faster than runsc exec: ${(median(execRow.direct) / median(execRow.warren)).toFixed(2)}x faster`,
      );
    if (targets.length) console.log('\nTargets:\n  ' + targets.join('\n  '));
    if (fromSnapRatio.length)
      extra.push(
        `snapshot -> first exec median within 1.3x of direct restore: ${(median(fromSnapRatio[0]!) / median(fromSnapRatio[1]!)).toFixed(2)}x`,
      );
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
