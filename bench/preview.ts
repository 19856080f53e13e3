/**
 * Preview URL benchmark rows: the same Python app (test/preview-app.ts) in a
 * sandbox reached through its preview URL, and on the host's loopback reached
 * directly, with the same HTTP client. Run alone with
 * `node --import tsx bench/preview.ts`; `bench/run.ts` includes these rows.
 */
import { spawn } from 'node:child_process';
import { Agent } from 'node:http';
import { createServer } from 'node:net';
import { pathToFileURL } from 'node:url';
import { PREVIEW_APP, previewRequest } from '../test/preview-app';
import { startTestPlatform, type TestPlatform } from '../test/fixture';
import { percentile, printTable, type Row } from './stats';

const REQUESTS = Number(process.env.BENCH_PREVIEW_REQUESTS ?? 200);
const DOWNLOAD_MB = 100;
const DOWNLOAD_RUNS = Number(process.env.BENCH_FILE_RUNS ?? 3);

const now = () => performance.now();

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitFor(fn: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the preview app did not start');
}

export async function previewRows(p: TestPlatform): Promise<{ rows: Row[]; notes: string[] }> {
  const apiPort = new URL(p.url).port;
  const sbx = await p.json<{ id: string }>('/v1/sandboxes', {
    method: 'POST',
    json: { template: 'base' },
  });
  const hostPort = await freePort();
  const local = spawn('python3', ['-c', PREVIEW_APP, String(hostPort)], { stdio: 'ignore' });
  const agents = [new Agent({ keepAlive: true }), new Agent({ keepAlive: true })];
  try {
    await p.json(`/v1/sandboxes/${sbx.id}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', PREVIEW_APP, '3000'] },
    });
    const viaPreview = (path: string, agent?: Agent) =>
      previewRequest(p.url, `3000-${sbx.id}.localhost:${apiPort}`, path, { agent });
    const viaLoopback = (path: string, agent?: Agent) =>
      previewRequest(`http://127.0.0.1:${hostPort}`, `127.0.0.1:${hostPort}`, path, { agent });
    await waitFor(async () => (await viaPreview('/hello')).status === 200);
    await waitFor(async () => (await viaLoopback('/hello')).status === 200);

    const timeOne = async (fn: () => Promise<{ status: number }>) => {
      const t = now();
      const res = await fn();
      if (res.status !== 200) throw new Error(`status ${res.status}`);
      return now() - t;
    };

    const keptAlive: Row = {
      name: 'preview request round trip (kept-alive)',
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'same app on host loopback, same client',
    };
    const fresh: Row = {
      name: 'preview request on a new connection',
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'same app on host loopback, new connection',
    };
    for (let i = 0; i < 20; i++) {
      await viaPreview('/hello', agents[0]);
      await viaLoopback('/hello', agents[1]);
    }
    for (let i = 0; i < REQUESTS; i++) {
      keptAlive.warren.push(await timeOne(() => viaPreview('/hello', agents[0])));
      keptAlive.direct.push(await timeOne(() => viaLoopback('/hello', agents[1])));
      fresh.warren.push(await timeOne(() => viaPreview('/hello')));
      fresh.direct.push(await timeOne(() => viaLoopback('/hello')));
    }

    const download: Row = {
      name: `${DOWNLOAD_MB} MB download through a preview URL`,
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'same app on host loopback',
    };
    const path = `/bytes?n=${DOWNLOAD_MB * 1024 * 1024}`;
    for (let i = 0; i < DOWNLOAD_RUNS; i++) {
      download.warren.push(await timeOne(() => viaPreview(path, agents[0])));
      download.direct.push(await timeOne(() => viaLoopback(path, agents[1])));
    }

    const mbps = (ms: number) => (DOWNLOAD_MB / (ms / 1000)).toFixed(0);
    const dw = percentile(download.warren, 50);
    const dd = percentile(download.direct, 50);
    const added = percentile(keptAlive.warren, 50) - percentile(keptAlive.direct, 50);
    const notes = [
      `preview request added latency (median, kept-alive): ${added.toFixed(2)} ms (target < 1 ms)`,
      `preview download: ${mbps(dw)} MB/s through the preview URL, ${mbps(dd)} MB/s direct: ${(dd / dw).toFixed(2)} of direct (target >= 0.8)`,
    ];
    return { rows: [keptAlive, fresh, download], notes };
  } finally {
    for (const a of agents) a.destroy();
    local.kill();
    await p.api(`/v1/sandboxes/${sbx.id}`, { method: 'DELETE' }).catch(() => undefined);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const p = await startTestPlatform({ memoryBudgetMb: 16_000 });
  try {
    const { rows, notes } = await previewRows(p);
    printTable(rows);
    console.log('\n' + notes.join('\n'));
  } finally {
    await p.stop();
  }
}
