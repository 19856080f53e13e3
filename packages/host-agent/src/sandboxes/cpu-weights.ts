/**
 * Idle sandboxes yield the CPU. An idle sandbox is not free: the runtime's
 * own threads use 3 to 6% of a core in each (docs/limits.md), so on a host
 * with a few dozen of them awake, a create, a wake or a sandbox at work waits
 * behind them. A live sandbox that has had no request, port connection,
 * terminal or egress bytes for `idleSeconds`, and used less than
 * `idleCpuPercent` of a CPU since the previous pass, gets a small CPU weight
 * (RuntimeDriver.setCpuWeight): it still has every CPU cycle that is free,
 * and yields only when the host's CPUs are all busy. Its next request gives
 * it its normal weight back as it is sent, and so does a pass that finds it
 * using more CPU. Nothing in it is stopped.
 */
import type { HostContext } from '../context';

export interface CpuWeightOptions {
  /** Idle this long, a sandbox gets the idle weight; 0 turns the idle weight off. */
  idleSeconds: number;
  /** A sandbox using more than this (percent of one CPU, between passes) is not idle. */
  idleCpuPercent: number;
  /** Milliseconds; tests move it. */
  now?: () => number;
}

type Ctx = Pick<HostContext, 'driver' | 'registry' | 'egress'>;

export class CpuWeights {
  /** Sandboxes this process knows to be at the normal weight. */
  private readonly normal = new Set<string>();
  /** Sandboxes given the idle weight. */
  private readonly idle = new Set<string>();
  private readonly lastUse = new Map<string, number>();
  /** CPU time and egress bytes at the previous pass. */
  private readonly samples = new Map<string, { cpuNs: number | null; net: number; at: number }>();
  private readonly writes = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<void> | null = null;
  private readonly now: () => number;

  constructor(
    private readonly ctx: Ctx,
    private readonly o: CpuWeightOptions,
  ) {
    this.now = o.now ?? Date.now;
  }

  /** How often passes run: a few per idle period, at most every 5 s. */
  get intervalMs(): number {
    return Math.min(5000, Math.max(100, this.o.idleSeconds * 250));
  }

  start(): void {
    if (this.o.idleSeconds <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      this.pass ??= this.sweep()
        .catch(() => undefined)
        .finally(() => (this.pass = null));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pass;
    await Promise.all(this.writes.values());
  }

  /** A request for sandbox `id`: in use from now, at its normal weight. */
  used(id: string): void {
    this.lastUse.set(id, this.now());
    if (this.o.idleSeconds <= 0 || this.normal.has(id)) return;
    this.setWeight(id, 'normal');
  }

  /** One pass over the live sandboxes (the timer runs them; unit tests call it). */
  async sweep(): Promise<void> {
    const ids = new Set(this.ctx.registry.ids());
    for (const map of [this.lastUse, this.samples])
      for (const id of map.keys()) if (!ids.has(id)) map.delete(id);
    for (const set of [this.normal, this.idle])
      for (const id of set) if (!ids.has(id)) set.delete(id);
    for (const id of ids) await this.look(id);
  }

  private async look(id: string): Promise<void> {
    if (!this.ctx.registry.has(id)) return;
    const sbx = this.ctx.registry.live(id);
    if (sbx.paused) return;
    const now = this.now();
    const bytes = this.ctx.egress?.bytes(id);
    const net = bytes ? bytes.rx + bytes.tx : 0;
    const cpuNs = await this.ctx.driver.cpuUsageNs(sbx.containerId).catch(() => null);
    const prev = this.samples.get(id);
    this.samples.set(id, { cpuNs, net, at: now });
    if (!this.lastUse.has(id) || sbx.channel.busy || (prev && prev.net !== net))
      this.lastUse.set(id, now);
    const cpu =
      prev && prev.cpuNs !== null && cpuNs !== null && now > prev.at
        ? ((cpuNs - prev.cpuNs) / 1e6 / (now - prev.at)) * 100
        : null;
    const quiet = cpu !== null && cpu < this.o.idleCpuPercent;
    const idleFor = now - this.lastUse.get(id)!;
    if (this.idle.has(id)) {
      if (!quiet && cpu !== null) this.setWeight(id, 'normal');
      return;
    }
    if (quiet && idleFor >= this.o.idleSeconds * 1000) this.setWeight(id, 'idle');
  }

  private setWeight(id: string, weight: 'idle' | 'normal'): void {
    const [to, from] = weight === 'idle' ? [this.idle, this.normal] : [this.normal, this.idle];
    to.add(id);
    from.delete(id);
    if (!this.ctx.registry.has(id)) return;
    const containerId = this.ctx.registry.live(id).containerId;
    // One write at a time per sandbox, in order: the last weight given is the one it has.
    const write = (this.writes.get(id) ?? Promise.resolve())
      .then(() => this.ctx.driver.setCpuWeight(containerId, weight))
      // A sandbox that went away meanwhile (or a runtime without cgroups) keeps no weight to track.
      .catch(() => to.delete(id))
      .finally(() => {
        if (this.writes.get(id) === write) this.writes.delete(id);
      });
    this.writes.set(id, write);
  }
}
