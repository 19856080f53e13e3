/**
 * `node --import tsx bench/dashboard.ts`: the web dashboard's first render of
 * the sandboxes list with BENCH_DASHBOARD_SANDBOXES (default 200) sandboxes,
 * in headless Chromium against a real platform, and the gzip size of the
 * JavaScript it ships.
 *
 * The time is from navigation start to the moment every row is in the DOM
 * (performance.now() in the page, which counts from navigation start), in a
 * fresh browser context each run (empty cache), signed in already. By default one
 * real sandbox is created and its record copied in the store for the rest, as
 * hibernated (the list route only reads records, so the page gets the same
 * rows; a running record with no sandbox behind it would be reaped as lost); with
 * BENCH_DASHBOARD_REAL=1 every sandbox is real (64 MiB each, four at a time).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { newId } from '@warren/protocol';
import { REPO, startTestPlatform } from '../test/fixture';
import { median, percentile } from './stats';

const COUNT = Number(process.env.BENCH_DASHBOARD_SANDBOXES ?? 200);
const RUNS = Number(process.env.BENCH_DASHBOARD_RUNS ?? 7);
const REAL = process.env.BENCH_DASHBOARD_REAL === '1';
const DIST = join(REPO, 'packages/dashboard/dist');

/** Every JavaScript file shipped, and the entry chunk alone (what the list page loads). */
function shippedJs(): { files: number; bytes: number; gzip: number; entryGzip: number } {
  const assets = join(DIST, 'assets');
  const entry = /src="\/assets\/([^"]+\.js)"/.exec(
    readFileSync(join(DIST, 'index.html'), 'utf8'),
  )?.[1];
  let bytes = 0;
  let gzip = 0;
  let entryGzip = 0;
  const js = readdirSync(assets).filter((f) => f.endsWith('.js'));
  for (const f of js) {
    const data = readFileSync(join(assets, f));
    bytes += data.length;
    const z = gzipSync(data, { level: 9 }).length;
    gzip += z;
    if (f === entry) entryGzip = z;
  }
  return { files: js.length, bytes, gzip, entryGzip };
}

const p = await startTestPlatform();
const copies: string[] = [];
const real: string[] = [];
try {
  const create = async () =>
    (
      await p.json<{ id: string }>('/v1/sandboxes', {
        method: 'POST',
        json: { memory_mb: 64, metadata: { bench: 'dashboard' } },
      })
    ).id;
  const t0 = performance.now();
  if (REAL) {
    while (real.length < COUNT) {
      const batch = Math.min(4, COUNT - real.length);
      real.push(...(await Promise.all(Array.from({ length: batch }, create))));
    }
  } else {
    real.push(await create());
    const rec = await p.context.store.getSandboxById(real[0]!);
    if (!rec) throw new Error('the created sandbox has no record');
    for (let i = 1; i < COUNT; i++) {
      const id = newId('sandbox');
      copies.push(id);
      await p.context.store.insertSandbox(
        {
          ...rec,
          id,
          state: 'hibernated',
          created_at: new Date(Date.parse(rec.created_at) - i * 1000).toISOString(),
        },
        'bench copy',
      );
    }
  }
  const setupMs = performance.now() - t0;

  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
  const samples: number[] = [];
  try {
    for (let run = 0; run < RUNS; run++) {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await ctx.addInitScript(
        `sessionStorage.setItem('warren.key', ${JSON.stringify(p.adminToken)})`,
      );
      const page = await ctx.newPage();
      await page.goto(`${p.url}/sandboxes`);
      await page
        .waitForFunction(`document.querySelectorAll('tr[data-id]').length >= ${COUNT}`, undefined, {
          polling: 'raf',
          timeout: 60_000,
        })
        .catch(async (err: unknown) => {
          const rows = await page.locator('tr[data-id]').count();
          throw new Error(
            `${rows} rows of ${COUNT} at ${page.url()}: ${(await page.locator('main').textContent())?.slice(0, 300)}`,
            { cause: err },
          );
        });
      samples.push(await page.evaluate(() => performance.now()));
      await ctx.close();
    }
  } finally {
    await browser.close();
  }
  const js = shippedJs();
  console.log(
    `dashboard: ${COUNT} sandboxes (${REAL ? 'all real' : `1 real, ${COUNT - 1} copied records`}, set up in ${(setupMs / 1000).toFixed(1)} s)`,
  );
  console.log(
    `  first render of the sandboxes list (navigation start to ${COUNT} rows, cold cache, ${RUNS} runs): median ${median(samples).toFixed(0)} ms, p95 ${percentile(samples, 95).toFixed(0)} ms`,
  );
  console.log(
    `  shipped JavaScript: ${js.files} file(s), ${(js.bytes / 1024).toFixed(1)} KiB, ${(js.gzip / 1024).toFixed(1)} KiB gzip (level 9); the entry chunk the list page loads: ${(js.entryGzip / 1024).toFixed(1)} KiB gzip`,
  );
} finally {
  for (const id of copies) await p.context.store.deleteSandboxRow(id);
  for (const id of real) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
  await p.stop();
}
