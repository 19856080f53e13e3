/**
 * The control plane's Prometheus metrics, in a registry of its own per
 * platform (several platforms may share a process: tests), exposed at
 * GET /metrics. prom-client is the Prometheus project's Node client: it
 * keeps the counters and histograms and writes the text exposition format,
 * so none of that is hand-written here. Gauges of state (sandboxes by state,
 * host memory) are read when scraped, not kept up to date by hand.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { HostApi, HostCapacity } from '@warren/protocol';
import type { Store } from '../store/store';

const SANDBOX_STATES = [
  'creating',
  'running',
  'paused',
  'hibernated',
  'stopping',
  'stopped',
  'error',
] as const;

const MIB = 1024 * 1024;

/** Seconds from 5 ms to 2 min: API calls, and the restores and waits behind them. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Phases of a create take milliseconds. */
const PHASE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export type WebhookResult = 'delivered' | 'failed';

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly latency: Histogram<'method' | 'route' | 'status'>;
  private readonly errors: Counter<'code'>;
  private readonly creates: Counter<'source' | 'result'>;
  private readonly createSeconds: Histogram<'source'>;
  private readonly createPhaseSeconds: Histogram<'phase'>;
  private readonly restores: Counter<'result'>;
  private readonly refusals: Counter<'operation'>;
  private readonly egressBytes: Counter<'direction'>;
  private readonly egressConnections: Counter<'decision'>;
  private readonly webhooks: Counter<'result'>;
  private readonly webhookSeconds: Histogram<'result'>;

  constructor(store: Store, host: HostApi) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'warren_' });
    this.requests = new Counter({
      name: 'warren_http_requests_total',
      help: 'API requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.latency = new Histogram({
      name: 'warren_http_request_duration_seconds',
      help: 'Time to answer API requests (to the end of the response)',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.errors = new Counter({
      name: 'warren_api_errors_total',
      help: 'API error responses, by error code',
      labelNames: ['code'],
      registers,
    });
    this.creates = new Counter({
      name: 'warren_sandbox_creates_total',
      help: 'Sandboxes a host was asked to start, by source (template, snapshot, capture) and result (ok or the error code)',
      labelNames: ['source', 'result'],
      registers,
    });
    this.createSeconds = new Histogram({
      name: 'warren_sandbox_create_duration_seconds',
      help: 'Time a host took to start a new sandbox, successful starts only',
      labelNames: ['source'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.createPhaseSeconds = new Histogram({
      name: 'warren_sandbox_create_phase_duration_seconds',
      help: 'Where the time of successful sandbox starts went on their host, by phase (prepare, disk, restore, connect, hello, finish)',
      labelNames: ['phase'],
      buckets: PHASE_BUCKETS,
      registers,
    });
    this.restores = new Counter({
      name: 'warren_sandbox_restores_total',
      help: 'Hibernated sandboxes woken (restored from their image), by result (ok or the error code)',
      labelNames: ['result'],
      registers,
    });
    this.refusals = new Counter({
      name: 'warren_admission_refusals_total',
      help: 'Starts a host refused for lack of memory (INSUFFICIENT_CAPACITY), by operation',
      labelNames: ['operation'],
      registers,
    });
    this.egressBytes = new Counter({
      name: 'warren_egress_bytes_total',
      help: 'Bytes through the egress proxy of finished connections: in (to sandboxes) and out',
      labelNames: ['direction'],
      registers,
    });
    this.egressConnections = new Counter({
      name: 'warren_egress_connections_total',
      help: 'Egress connections sandboxes asked for, by decision',
      labelNames: ['decision'],
      registers,
    });
    this.webhooks = new Counter({
      name: 'warren_webhook_deliveries_total',
      help: 'Webhook deliveries, by result',
      labelNames: ['result'],
      registers,
    });
    this.webhookSeconds = new Histogram({
      name: 'warren_webhook_delivery_duration_seconds',
      help: 'Time a webhook delivery took, retries included',
      labelNames: ['result'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'warren_sandboxes',
      help: 'Sandbox records by state, every organisation (stopped ones until they are purged)',
      labelNames: ['state'],
      registers,
      async collect() {
        const counts = await store.countSandboxesByState();
        for (const state of SANDBOX_STATES) this.set({ state }, counts[state] ?? 0);
      },
    });
    hostGauges(host, registers);
  }

  /** One answered API request; `route` is the route pattern (never the raw URL). */
  request(method: string, route: string, status: number, seconds: number, code: string | null) {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
    if (code) this.errors.inc({ code });
  }

  sandboxCreate(
    source: string,
    result: string,
    seconds: number,
    phasesMs?: Record<string, number>,
  ): void {
    this.creates.inc({ source, result });
    if (result === 'ok') this.createSeconds.observe({ source }, seconds);
    for (const [phase, ms] of Object.entries(phasesMs ?? {}))
      this.createPhaseSeconds.observe({ phase }, ms / 1000);
    if (result === 'INSUFFICIENT_CAPACITY') this.refusals.inc({ operation: 'create' });
  }

  sandboxRestore(result: string): void {
    this.restores.inc({ result });
    if (result === 'INSUFFICIENT_CAPACITY') this.refusals.inc({ operation: 'wake' });
  }

  /** A finished (or refused) egress connection, as the host reports it. */
  egress(e: { decision: string; bytes_in: number; bytes_out: number }): void {
    this.egressConnections.inc({ decision: e.decision });
    if (e.bytes_in > 0) this.egressBytes.inc({ direction: 'in' }, e.bytes_in);
    if (e.bytes_out > 0) this.egressBytes.inc({ direction: 'out' }, e.bytes_out);
  }

  /** One webhook delivery, after its last attempt; the webhook sender calls this. */
  webhookDelivery(result: WebhookResult, seconds: number): void {
    this.webhooks.inc({ result });
    this.webhookSeconds.observe({ result }, seconds);
  }

  /** The text exposition format, and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Host memory gauges, read from HostApi.capacity() once per scrape. */
function hostGauges(host: HostApi, registers: Registry[]): void {
  let pending: Promise<HostCapacity> | null = null;
  const read = () => {
    pending ??= host.capacity().finally(() => setImmediate(() => (pending = null)));
    return pending;
  };
  const gauge = (name: string, help: string, pick: (c: HostCapacity) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ['host'],
      registers,
      async collect() {
        const value = pick(await read());
        if (value !== undefined) this.set({ host: host.id }, value);
      },
    });
  gauge(
    'warren_host_memory_budget_bytes',
    'Memory the host may reserve for sandboxes',
    (c) => c.memory_budget_mb * MIB,
  );
  gauge(
    'warren_host_memory_reserved_bytes',
    'Memory reserved by the sandboxes live on the host',
    (c) => c.memory_reserved_mb * MIB,
  );
  gauge(
    'warren_host_memory_used_bytes',
    'Memory the live sandboxes use now (their cgroups: page cache included)',
    (c) => (c.memory_used_mb === undefined ? undefined : c.memory_used_mb * MIB),
  );
  gauge('warren_host_sandboxes', 'Sandboxes live on the host', (c) => c.sandboxes);
}
