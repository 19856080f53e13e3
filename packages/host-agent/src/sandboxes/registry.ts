/**
 * The sandboxes live on this host, their memory reservations against the
 * host's budget (admission), and the runtime teardowns still finishing in
 * the background.
 */
import { WarrenError, type HostCapacity } from '@warren/protocol';
import type { GuestChannel } from '../guest/channel';
import { admit, type AdmissionSettings } from './admission';
import { ownerOf } from './runtime-ids';

const RUNTIME = 'runtime:';

/** The teardown key of the runtime's removal of one container. */
export function runtimeKey(containerId: string): string {
  return RUNTIME + containerId;
}

/** The teardown key of the removal of a hibernation image a wake has restored. */
export function usedImageKey(sandboxId: string): string {
  return `image:${sandboxId}`;
}

/** The teardown key of the release of a sandbox's disks moved aside at hibernate. */
export function retiredDisksKey(sandboxId: string): string {
  return `disk:${sandboxId}`;
}

export interface LiveSandbox {
  id: string;
  /**
   * The runtime's container of this sandbox now: the sandbox id until its
   * first wake, then a new one per wake (see runtimeIds.ts), so a wake never
   * waits for the runtime to forget the container it hibernated.
   */
  containerId: string;
  memoryMb: number;
  channel: GuestChannel;
  workDir: string;
  paused: boolean;
}

export class SandboxRegistry {
  private readonly sandboxes = new Map<string, LiveSandbox>();
  /** When each live sandbox was (re)started or adopted: its usage counters count from then. */
  private readonly started = new Map<string, string>();
  /** Memory reserved by sandboxes being created or running, in MiB. */
  private reservedMb = 0;
  /**
   * Teardowns still running in the background (awaited by settle), by key:
   * a sandbox id for its work directory and disk, `runtime:<container id>`
   * for the runtime's removal of one container (runtimeKey).
   */
  private readonly teardowns = new Map<string, Promise<void>>();

  /** Sandboxes being created or woken: admitted, not live yet, not measured yet. */
  private readonly starting = new Set<string>();

  /**
   * Template bakes in flight, by runtime container id: what stops each, and
   * the bake itself, which removes its container once it has failed. Their
   * containers are no sandboxes, but closing the host agent must not leave
   * them running.
   */
  private readonly bakes = new Map<string, { stop: () => Promise<void>; done: Promise<unknown> }>();

  constructor(
    private readonly hostId: string,
    readonly memory: AdmissionSettings,
  ) {}

  capacity(): HostCapacity {
    return {
      memory_budget_mb: this.memory.budgetMb,
      memory_reserved_mb: this.reservedMb,
      memory_overcommit: this.memory.overcommit,
      memory_start_mb: this.memory.startMb,
      sandboxes: this.sandboxes.size,
    };
  }

  /**
   * Admits a sandbox on what the sandboxes use (usedMb: the live ones as
   * measured, see admission.ts), or refuses at once with INSUFFICIENT_CAPACITY.
   */
  reserve(id: string, memoryMb: number, usedMb: number): void {
    const verdict = admit(this.memory, {
      usedMb: usedMb + this.starting.size * this.memory.startMb,
      reservedMb: this.reservedMb,
      memoryMb,
    });
    if (!verdict.ok) {
      throw new WarrenError(
        'INSUFFICIENT_CAPACITY',
        `not enough memory on host ${this.hostId} for ${id}: ${verdict.reason}`,
        verdict.details,
      );
    }
    this.reservedMb += memoryMb;
    this.starting.add(id);
  }

  /** Whether a create or a wake is under way (admitted, not live yet). */
  get busyStarting(): boolean {
    return this.starting.size > 0;
  }

  release(id: string, memoryMb: number): void {
    this.reservedMb -= memoryMb;
    this.starting.delete(id);
  }

  /** Adds a sandbox whose memory was reserved for it. */
  add(sbx: LiveSandbox): void {
    this.starting.delete(sbx.id);
    this.sandboxes.set(sbx.id, sbx);
    this.started.set(sbx.id, new Date().toISOString());
  }

  /** Adds a sandbox found running (after a restart), counting its memory without admission. */
  adopt(sbx: LiveSandbox): void {
    this.reservedMb += sbx.memoryMb;
    this.sandboxes.set(sbx.id, sbx);
    this.started.set(sbx.id, new Date().toISOString());
  }

  /** Forgets a sandbox and releases its reservation; returns what it was. */
  remove(id: string): LiveSandbox | undefined {
    const sbx = this.sandboxes.get(id);
    if (!sbx) return undefined;
    this.sandboxes.delete(id);
    this.started.delete(id);
    this.reservedMb -= sbx.memoryMb;
    return sbx;
  }

  /** When a live sandbox was started or adopted (ISO 8601), or undefined. */
  startedAt(id: string): string | undefined {
    return this.started.get(id);
  }

  has(id: string): boolean {
    return this.sandboxes.has(id);
  }

  ids(): string[] {
    return [...this.sandboxes.keys()];
  }

  /** The live sandbox, or SANDBOX_NOT_RUNNING. */
  live(id: string): LiveSandbox {
    const sbx = this.sandboxes.get(id);
    if (!sbx)
      throw new WarrenError(
        'SANDBOX_NOT_RUNNING',
        `sandbox ${id} is not running on host ${this.hostId}`,
      );
    return sbx;
  }

  /** Runs `work` after any earlier teardown of the same key; failures are swallowed. */
  teardown(id: string, work: () => Promise<unknown>): void {
    const previous = this.teardowns.get(id) ?? Promise.resolve();
    const done: Promise<void> = previous
      .then(work)
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        if (this.teardowns.get(id) === done) this.teardowns.delete(id);
      });
    this.teardowns.set(id, done);
  }

  /** Waits for the background teardown of one key (a sandbox's disk, to make it again). */
  async teardownOf(id: string): Promise<void> {
    await this.teardowns.get(id);
  }

  /** Waits for the runtime's removal of every container of a sandbox still pending. */
  async runtimeTeardownsOf(sandboxId: string): Promise<void> {
    const own = [...this.teardowns.entries()]
      .filter(
        ([key]) => key.startsWith(RUNTIME) && ownerOf(key.slice(RUNTIME.length)) === sandboxId,
      )
      .map(([, done]) => done);
    await Promise.all(own);
  }

  /** Runs a bake, held until it ends; `stopBakes` stops it and waits for its cleanup. */
  async holdBake<T>(containerId: string, stop: () => Promise<void>, bake: Promise<T>): Promise<T> {
    this.bakes.set(containerId, { stop, done: bake });
    try {
      return await bake;
    } finally {
      this.bakes.delete(containerId);
    }
  }

  /** Stops every bake in flight and waits until each has removed what it made. */
  async stopBakes(): Promise<void> {
    const bakes = [...this.bakes.values()];
    await Promise.all(bakes.map((b) => b.stop().catch(() => undefined)));
    await Promise.all(bakes.map((b) => b.done.catch(() => undefined)));
  }

  /** Waits until every background teardown has finished. */
  async settle(): Promise<void> {
    while (this.teardowns.size > 0) await Promise.all([...this.teardowns.values()]);
  }
}
