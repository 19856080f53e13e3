/**
 * Time-driven sandbox housekeeping: TTL expiry, idle hibernation of
 * persistent sandboxes, a limit on idle sandboxes kept awake per host, and
 * sandboxes whose runtime died (dead.ts). The clock is injected (unit tests move it).
 */
import type { HostApi } from '@warren/protocol';
import type { Config } from '../config';
import type { Store } from '../store/store';
import { isoIn } from './clock';
import { DeadSandboxes } from './dead';
import type { SandboxLifecycle } from './lifecycle';
import { hostIds } from '../hosts/router';
import { idleRows, leastRecentlyUsed } from './pressure-plan';

/**
 * CPU use is averaged over windows of at least this long: over one short sweep
 * interval, an idle sandbox's timer ticks can look like several percent of a CPU.
 */
export const CPU_WINDOW_MS = 1000;

export class IdleSweeps {
  /**
   * Per running sandbox: the CPU time at the start of the current window, and
   * the percent measured over the last complete window (null: none yet).
   */
  private readonly cpuSamples = new Map<
    string,
    { ns: number; at: number; percent: number | null }
  >();

  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
    private readonly config: Config,
    private readonly lifecycle: SandboxLifecycle,
  ) {
    this.dead = new DeadSandboxes(store, host, lifecycle);
  }

  private readonly dead: DeadSandboxes;

  /** Records sandboxes whose runtime died (out of memory, or lost); returns them. */
  reapDead(): Promise<Array<{ id: string; cause: string }>> {
    return this.dead.reap();
  }

  /**
   * Destroys sandboxes whose TTL has passed without activity; returns their ids.
   * Persistent sandboxes are never reaped, and a sandbox with a request still
   * open (a long exec stream) has not been idle: its deadline moves on.
   */
  async reapExpired(): Promise<string[]> {
    const reaped: string[] = [];
    const mine = new Set(hostIds(this.host));
    for (const row of await this.store.expiredSandboxes(isoIn(this.lifecycle.clock))) {
      if (row.persistent === 1 || !mine.has(row.host_id)) continue;
      if (this.lifecycle.hasOperations(row.id)) {
        await this.lifecycle.touch(row);
        continue;
      }
      await this.lifecycle.destroy(row.org_id, row.id, 'ttl_expired');
      reaped.push(row.id);
    }
    return reaped;
  }

  /**
   * Percent of one CPU the sandbox used over its last complete window of at
   * least CPU_WINDOW_MS (null: no complete window yet).
   */
  private async cpuPercent(id: string): Promise<number | null> {
    const ns = await this.host.sandboxes.cpuUsageNs(id);
    if (ns === null) return null;
    const now = this.lifecycle.clock();
    const prev = this.cpuSamples.get(id);
    if (!prev || now < prev.at) {
      this.cpuSamples.set(id, { ns, at: now, percent: null });
      return null;
    }
    if (now - prev.at < CPU_WINDOW_MS) return prev.percent;
    const percent = ((ns - prev.ns) / 1e6 / (now - prev.at)) * 100;
    this.cpuSamples.set(id, { ns, at: now, percent });
    return percent;
  }

  /**
   * Hibernates persistent sandboxes that have been idle for their idle timeout:
   * no API call, no request open on them, and CPU use under the threshold
   * since the previous sweep. Returns their ids.
   */
  async hibernateIdle(): Promise<string[]> {
    const now = this.lifecycle.clock();
    const hibernated: string[] = [];
    const rows = await this.store.sandboxesOnHost(hostIds(this.host), ['running', 'paused']);
    const running = new Set(rows.filter((r) => r.state === 'running').map((r) => r.id));
    for (const id of this.cpuSamples.keys()) if (!running.has(id)) this.cpuSamples.delete(id);
    for (const row of rows) {
      // idle_timeout_seconds 0: never (a database's sandbox; its database scales to zero itself).
      if (row.persistent !== 1 || row.idle_timeout_seconds === 0) continue;
      // Sampled every sweep, so a sandbox that turns idle has a recent figure.
      const cpu = row.state === 'running' ? await this.cpuPercent(row.id) : 0;
      const idleFor = now - Date.parse(row.last_activity_at);
      if (idleFor < row.idle_timeout_seconds * 1000 || this.lifecycle.hasOperations(row.id))
        continue;
      if (cpu === null || cpu >= this.config.idleCpuPercent) continue;
      try {
        const after = await this.lifecycle.hibernateUnused(
          row,
          `idle for ${Math.round(idleFor / 1000)} s`,
        );
        if (after.state !== 'hibernated') continue;
        this.cpuSamples.delete(row.id);
        hibernated.push(row.id);
      } catch {
        // Changed state meanwhile (deleted, woken): the next sweep looks again.
      }
    }
    return hibernated;
  }

  /**
   * An idle sandbox is not free: the runtime's own threads use CPU in every
   * one of them (with runsc 2024-07's systrap platform, 3 to 5% of a core,
   * docs/limits.md), so a few dozen idle sandboxes fill a small host's CPUs.
   * Keeps at most `idleAwakeMax` idle ones awake per host (idle as the memory
   * pressure ladder counts it: no API call for WARREN_PRESSURE_IDLE_SECONDS,
   * no request open; and here also CPU under the idle threshold, so a sandbox
   * whose background process works is neither counted nor hibernated) and
   * hibernates the least recently used beyond it, persistent or not. They
   * wake on their next use. Returns their ids.
   */
  async hibernateExcessIdle(): Promise<string[]> {
    const max = this.config.idleAwakeMax;
    if (max <= 0) return [];
    const rows = await this.store.sandboxesOnHost(hostIds(this.host), ['running', 'paused']);
    const idle = idleRows(rows, {
      now: this.lifecycle.clock(),
      idleSeconds: this.config.pressureIdleSeconds,
      busy: (id) => this.lifecycle.hasOperations(id),
    });
    const hibernated: string[] = [];
    for (const host of new Set(idle.map((r) => r.host_id))) {
      const onHost = idle.filter((r) => r.host_id === host);
      if (onHost.length <= max) continue;
      const quiet: typeof onHost = [];
      for (const row of onHost) {
        const cpu = row.state === 'running' ? await this.cpuPercent(row.id) : 0;
        if (cpu !== null && cpu < this.config.idleCpuPercent) quiet.push(row);
      }
      const lru = leastRecentlyUsed(quiet, (r) => r.last_activity_at);
      for (const row of lru.slice(0, quiet.length - max)) {
        const after = await this.lifecycle
          .hibernateUnused(row, `more than ${max} idle sandboxes awake on the host`)
          .catch(() => null); // changed state meanwhile: the next sweep looks again
        if (after?.state !== 'hibernated') continue;
        this.cpuSamples.delete(row.id);
        hibernated.push(row.id);
      }
    }
    return hibernated;
  }
}
