/**
 * Webhook delivery latency: from an event emitted (ctx.webhooks.emit, which
 * writes the outbox row) to the receiver on loopback holding the request,
 * beside the same signed body POSTed directly to the same receiver. Then a
 * real sandbox event: pause/resume through the API to the receiver, measured
 * from the event's own timestamp (millisecond resolution).
 * Run: node --import tsx bench/webhooks.ts (part of `npm run bench`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestPlatform } from '../test/fixture';
import { signatureHeaders } from '../packages/server/src/webhooks/deliver';
import { now, printTable, type Row } from './stats';

const RUNS = Number(process.env.BENCH_WEBHOOK_RUNS ?? 100);
const SANDBOX_RUNS = Number(process.env.BENCH_WEBHOOK_SANDBOX_RUNS ?? 10);

let onRequest: (body: string) => void = () => undefined;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    onRequest(Buffer.concat(chunks).toString());
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
const next = () => new Promise<string>((resolve) => (onRequest = resolve));

const p = await startTestPlatform();
let sbx: string | null = null;
try {
  const ep = await p.json<{ id: string; secret: string }>('/v1/webhooks', {
    method: 'POST',
    json: { url, events: ['quota.exceeded', 'sandbox.state_changed'] },
  });
  const org = 'org_default';
  const emitted: number[] = [];
  const direct: number[] = [];
  for (let i = 0; i < RUNS + 5; i++) {
    const got = next();
    const t = now();
    await p.context.webhooks.emit(org, 'quota.exceeded', { run: i });
    await got;
    if (i >= 5) emitted.push(now() - t); // the first few warm the connection pool and the store
    const body = JSON.stringify({ type: 'quota.exceeded', timestamp: '', data: { run: i } });
    const gotDirect = next();
    const d = now();
    const sent = fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...signatureHeaders(`msg_${i}`, new Date(), body, [ep.secret]),
      },
      body,
    });
    await gotDirect;
    const at = now();
    await sent;
    if (i >= 5) direct.push(at - d);
  }

  sbx = (
    await p.json<{ id: string }>('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'base', memory_mb: 128 },
    })
  ).id;
  await new Promise((r) => setTimeout(r, 500)); // the creation's events are out of the way
  const state: number[] = [];
  for (let i = 0; i < SANDBOX_RUNS; i++) {
    for (const action of ['pause', 'resume']) {
      const got = next();
      await p.json(`/v1/sandboxes/${sbx}/${action}`, { method: 'POST' });
      const event = JSON.parse(await got) as { timestamp: string; data: { at: string } };
      state.push(Date.now() - Date.parse(event.data.at));
    }
  }

  console.log(`\nWarren webhook delivery — ${new Date().toISOString()}\n`);
  const rows: Row[] = [
    {
      name: 'emit -> receiver got it',
      unit: 'ms',
      warren: emitted,
      direct,
      directName: 'the same signed POST by fetch',
    },
  ];
  printTable(rows);
  const sorted = [...state].sort((a, b) => a - b);
  const pick = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  console.log(
    `\nsandbox pause/resume state change -> receiver got it (n=${state.length}, ms resolution): median ${pick(0.5)} ms, p95 ${pick(0.95)} ms`,
  );
} finally {
  if (sbx) await p.api(`/v1/sandboxes/${sbx}`, { method: 'DELETE' }).catch(() => undefined);
  await p.stop();
  server.closeAllConnections();
  server.close();
}
