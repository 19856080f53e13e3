/**
 * Usage sampling: every WARREN_USAGE_SAMPLE_MS each live sandbox's host
 * counters are read (HostApi.sandboxes.usage) and what it used since the
 * last sample is stored (./integrate.ts). A sandbox is sampled once more
 * just before its host stops it (destroy, hibernate: see metrics/host.ts),
 * so its last seconds count too. Samples older than the retention period
 * are pruned; the hourly totals stay.
 */
import type { HostApi } from '@warren/protocol';
import type { SandboxRecord, Store } from '../store/store';
import { UsageQueries } from '../store/usage';
import { increment, type CounterState } from './integrate';
import { hostIds } from '../hosts/router';

export interface SamplerLog {
  warn(o: object, msg: string): void;
}

const PRUNE_EVERY_MS = 60_000;

export class UsageSampler {
  readonly queries: UsageQueries;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** One sample at a time per sandbox: each counts from the one before. */
  private readonly locks = new Map<string, Promise<void>>();
  private prunedAt = 0;
  /** Where failures are reported (the API's log, once there is one). */
  log: SamplerLog = { warn: () => undefined };

  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
    readonly intervalMs: number,
    readonly retentionSeconds: number,
  ) {
    this.queries = new UsageQueries(store.db);
  }

  start(): void {
    this.timer = setInterval(() => void this.sampleAll(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    await Promise.all(this.locks.values());
  }

  /** Samples every sandbox live on the host; a pass still running is not started twice. */
  async sampleAll(): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      try {
        const live = await this.store.sandboxesOnHost(hostIds(this.host), ['running', 'paused']);
        await Promise.all(live.map((row) => this.sample(row)));
        if (Date.now() - this.prunedAt >= PRUNE_EVERY_MS) {
          this.prunedAt = Date.now();
          await this.queries.prune(
            new Date(Date.now() - this.retentionSeconds * 1000).toISOString(),
          );
        }
      } catch (err) {
        this.log.warn({ err }, 'usage sampling failed');
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  /** Samples one sandbox (by record or id); nothing when its host no longer runs it. */
  async sample(sandbox: SandboxRecord | string): Promise<void> {
    const id = typeof sandbox === 'string' ? sandbox : sandbox.id;
    const previous = this.locks.get(id) ?? Promise.resolve();
    const next = previous.then(() =>
      this.sampleNow(sandbox).catch((err: unknown) =>
        this.log.warn({ err, sandbox: id }, 'usage sample failed'),
      ),
    );
    this.locks.set(id, next);
    try {
      await next;
    } finally {
      if (this.locks.get(id) === next) this.locks.delete(id);
    }
  }

  private async sampleNow(sandbox: SandboxRecord | string): Promise<void> {
    const row = typeof sandbox === 'string' ? await this.store.getSandboxById(sandbox) : sandbox;
    if (!row) return;
    const usage = await this.host.sandboxes.usage(row.id);
    if (!usage) return;
    const last = await this.queries.sandbox(row.id);
    const prev: CounterState | null = last
      ? {
          at: Date.parse(last.last_at),
          startedAt: Date.parse(last.last_started_at),
          cpuSeconds: last.last_cpu_seconds,
          memoryBytes: last.last_memory_bytes,
          rxBytes: last.last_net_rx_bytes,
          txBytes: last.last_net_tx_bytes,
        }
      : null;
    const now = Date.now();
    const { inc, state } = increment(prev, {
      at: now,
      startedAt: Date.parse(usage.started_at),
      cpuSeconds: usage.cpu_seconds,
      memoryBytes: usage.memory_bytes,
      diskBytes: usage.disk_bytes,
      rxBytes: usage.net_rx_bytes,
      txBytes: usage.net_tx_bytes,
    });
    const at = new Date(now).toISOString();
    await this.queries.record(
      {
        sandbox_id: row.id,
        org_id: row.org_id,
        template: row.template,
        labels: JSON.stringify(row.metadata),
        last_at: at,
        last_started_at: new Date(state.startedAt).toISOString(),
        last_cpu_seconds: state.cpuSeconds,
        last_memory_bytes: state.memoryBytes,
        last_net_rx_bytes: state.rxBytes,
        last_net_tx_bytes: state.txBytes,
      },
      {
        sandbox_id: row.id,
        at,
        interval_seconds: inc.intervalSeconds,
        cpu_seconds: inc.cpuSeconds,
        memory_bytes: inc.memoryBytes,
        memory_gb_seconds: inc.memoryGbSeconds,
        disk_bytes: inc.diskBytes,
        net_rx_bytes: inc.rxBytes,
        net_tx_bytes: inc.txBytes,
      },
    );
  }
}
