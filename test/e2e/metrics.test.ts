/**
 * Metrics and usage on a real platform (gVisor): GET /metrics for the
 * install's admin only, counters that move with known requests, the
 * sandboxes-by-state gauge; a sandbox's CPU and disk in its usage samples,
 * and usage totals grouped by a label.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import parse, { type PrometheusFamily } from 'parse-prometheus-text-format';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const REFUSED_REQUEST = [
  'import urllib.request',
  'try:',
  "    urllib.request.urlopen('http://refused.example/', timeout=10)",
  'except Exception as e:',
  '    print(e)',
].join('\n');

/** The latency buckets of registry.ts, in seconds. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** The value of one series of a scrape (0 when the series is not there yet). */
function value(families: PrometheusFamily[], name: string, labels: Record<string, string>) {
  const family = families.find((f) => f.name === name);
  const sample = family?.metrics.find((m) =>
    Object.entries(labels).every(([k, v]) => m.labels?.[k] === v),
  );
  return Number(sample?.value ?? 0);
}

/**
 * One series of a histogram, read from the exposition text: its buckets (by
 * `le`, in the order written), count and sum. The parser above keeps no
 * labels of a histogram's series (it merges them all into one), so the
 * series of one route is read from its sample lines.
 */
function histogram(text: string, name: string, labels: Record<string, string>) {
  const series = { buckets: [] as Array<[string, number]>, count: 0, sum: 0 };
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || !m[1]!.startsWith(`${name}_`)) continue;
    const l = Object.fromEntries(
      [...m[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (!Object.entries(labels).every(([k, v]) => l[k] === v)) continue;
    const v = Number(m[3]);
    if (m[1] === `${name}_bucket`) series.buckets.push([l.le!, v]);
    else if (m[1] === `${name}_count`) series.count = v;
    else if (m[1] === `${name}_sum`) series.sum = v;
  }
  return series;
}

describe('metrics and usage (real gVisor)', () => {
  let p: TestPlatform;
  let id: string;
  let readerKey: string;

  const scrapeText = async (): Promise<string> => {
    const res = await p.api('/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    return res.text();
  };
  const scrape = async (): Promise<PrometheusFamily[]> => parse(await scrapeText());

  before(async () => {
    p = await startTestPlatform({ usageSampleMs: 500 });
    id = await createSandbox(p, { template: 'base', metadata: { team: 'metrics-e2e' } });
    const key = await p.json('/v1/keys', {
      method: 'POST',
      json: { name: 'reader', scopes: ['sandboxes:read'] },
    });
    readerKey = key.key;
  });
  after(async () => {
    await p?.stop();
  });

  it('serves /metrics to the admin only; request counters and gauges are true', async () => {
    assert.equal((await p.api('/metrics', { token: null })).status, 401);
    const refused = await p.api('/metrics', { token: readerKey });
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as Json).error.code, 'MISSING_SCOPE');
    // The figures cover every organisation: another organisation's admin is refused too.
    const org = await p.json('/v1/orgs', { method: 'POST', json: { name: 'tenant' } });
    const tenantAdmin = await p.json('/v1/keys', {
      method: 'POST',
      json: { name: 'tenant-admin', scopes: ['admin'], org_id: org.id },
    });
    assert.equal((await p.api('/metrics', { token: tenantAdmin.key })).status, 403);

    const labels = { method: 'GET', route: '/v1/sandboxes/:id', status: '404' };
    const beforeText = await scrapeText();
    for (let i = 0; i < 3; i++) assert.equal((await p.api('/v1/sandboxes/sbx_nosuch')).status, 404);
    const afterText = await scrapeText();
    const [before, after] = [parse(beforeText), parse(afterText)];
    const moved = (name: string, l: Record<string, string>) =>
      value(after, name, l) - value(before, name, l);
    assert.equal(moved('warren_http_requests_total', labels), 3);
    assert.equal(moved('warren_api_errors_total', { code: 'SANDBOX_NOT_FOUND' }), 3);
    // The same three requests in the latency histogram: its count, its +Inf bucket, its sum.
    const latency = 'warren_http_request_duration_seconds';
    assert.equal(after.find((f) => f.name === latency)?.type, 'HISTOGRAM');
    const was = histogram(beforeText, latency, labels);
    const now = histogram(afterText, latency, labels);
    assert.equal(now.count - was.count, 3);
    assert.ok(now.sum > was.sum, `sum ${was.sum} -> ${now.sum}`);
    assert.deepEqual(
      now.buckets.map(([le]) => le),
      [...LATENCY_BUCKETS.map(String), '+Inf'],
    );
    const inf = (h: typeof now) => h.buckets.find(([le]) => le === '+Inf')?.[1] ?? 0;
    assert.equal(inf(now) - inf(was), 3);
    const counts = now.buckets.map(([, c]) => c);
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
      'cumulative',
    );
    assert.equal(value(after, 'warren_sandboxes', { state: 'running' }), 1);
    assert.equal(value(after, 'warren_sandboxes', { state: 'hibernated' }), 0);
    assert.ok(
      value(after, 'warren_sandbox_creates_total', { source: 'template', result: 'ok' }) >= 1,
    );
    // Where the creates' time went on the host: every phase once per create, within its time.
    const created = histogram(afterText, 'warren_sandbox_create_duration_seconds', {
      source: 'template',
    });
    const phases = ['prepare', 'disk', 'restore', 'connect', 'hello', 'finish'].map((phase) =>
      histogram(afterText, 'warren_sandbox_create_phase_duration_seconds', { phase }),
    );
    for (const h of phases) assert.equal(h.count, created.count);
    assert.ok(phases[2]!.sum > 0 && phases[4]!.sum > 0, 'the restore and the hello take time');
    const phaseSum = phases.reduce((n, h) => n + h.sum, 0);
    assert.ok(phaseSum <= created.sum + 0.001, `phases ${phaseSum} s, creates ${created.sum} s`);
    assert.equal(
      value(after, 'warren_host_memory_budget_bytes', { host: p.host.id }),
      p.config.memoryBudgetMb * 1024 * 1024,
    );
    assert.ok(value(after, 'warren_host_memory_used_bytes', { host: p.host.id }) > 0);
  });

  it("shows a CPU burner's seconds and a 50 MB file in the sandbox's usage; totals by label", async () => {
    const metrics = (): Promise<Json> => p.json(`/v1/sandboxes/${id}/metrics`);
    const first = await waitFor(async () => (await metrics()).samples[0], {
      what: 'a first usage sample',
    });
    const burn = await exec(p, id, {
      cmd: 'sh',
      args: [
        '-c',
        "timeout 3 sh -c 'while :; do :; done'; head -c 50000000 /dev/urandom > /root/big",
      ],
    });
    assert.equal(burn.exit_code, 0, burn.stderr);
    // Refused by the egress proxy (policy none): the request and the 403 still cross it.
    const refused = await exec(p, id, { cmd: 'python3', args: ['-c', REFUSED_REQUEST] });
    assert.match(refused.stdout, /403/);
    const done = Date.now();
    const series = await waitFor(
      async () => {
        const m = await metrics();
        return m.samples.some((s: Json) => Date.parse(s.at) > done) && m;
      },
      { what: 'a usage sample after the burner' },
    );
    assert.ok(series.totals.cpu_seconds >= 2, `CPU seconds ${series.totals.cpu_seconds}`);
    assert.ok(series.totals.net_tx_bytes > 0 && series.totals.net_rx_bytes > 0);
    assert.ok(
      value(await scrape(), 'warren_egress_connections_total', { decision: 'denied' }) >= 1,
    );
    const disk = series.samples.at(-1).disk_bytes - first.disk_bytes;
    assert.ok(disk > 48e6 && disk < 56e6, `the disk grew by ${disk} bytes`);

    const usage: Json = await p.json('/v1/usage?group_by=label:team');
    const group = usage.groups.find((g: Json) => g.key === 'metrics-e2e');
    assert.equal(group?.sandboxes, 1, JSON.stringify(usage));
    assert.ok(group.cpu_seconds >= 2 && group.memory_gb_seconds > 0);
    assert.ok(group.disk_bytes_peak >= disk);
  });

  it('counts a wake of a hibernated sandbox as a restore, not as a create', async () => {
    const restored = { result: 'ok' };
    const created = { source: 'template', result: 'ok' };
    const before = await scrape();
    await p.json(`/v1/sandboxes/${id}/hibernate`, { method: 'POST' });
    const asleep = await scrape();
    assert.equal(value(asleep, 'warren_sandboxes', { state: 'hibernated' }), 1);
    assert.equal(value(asleep, 'warren_sandboxes', { state: 'running' }), 0);
    assert.equal(
      value(asleep, 'warren_sandbox_restores_total', restored),
      value(before, 'warren_sandbox_restores_total', restored),
    );
    const woken = await p.json(`/v1/sandboxes/${id}/wake`, { method: 'POST' });
    assert.equal(woken.state, 'running');
    const after = await scrape();
    const moved = (name: string, l: Record<string, string>) =>
      value(after, name, l) - value(before, name, l);
    assert.equal(moved('warren_sandbox_restores_total', restored), 1);
    assert.equal(moved('warren_sandbox_creates_total', created), 0);
    assert.equal(value(after, 'warren_sandboxes', { state: 'running' }), 1);
    assert.equal((await exec(p, id, { cmd: 'true' })).exit_code, 0);
  });
});
