/**
 * The memory pressure ladder. The host admits a sandbox on what sandboxes
 * really use (host-agent sandboxes/admission.ts). When it refuses a create
 * or a wake with INSUFFICIENT_CAPACITY, memory is freed, gentlest first:
 *
 *   1. reclaim from idle sandboxes (the host takes back their cache and
 *      lowers their soft limit; no process is touched), and ask again;
 *   2. hibernate the least recently used idle sandboxes, just enough of them
 *      (they wake on their next use, files and processes kept), and ask again;
 *   3. refuse with INSUFFICIENT_CAPACITY when that cannot be enough.
 *
 * No process of a sandbox is ever killed to make room, and nothing is
 * hibernated when hibernating every idle sandbox would not be enough.
 */
import { WarrenError, type HostApi } from '@warren/protocol';
import type { Config } from '../config';
import type { SandboxRecord, Store } from '../store/store';
import type { SandboxLifecycle } from './lifecycle';
import { idleRows, pickVictims, reclaimMayHelp, type Shortfall } from './pressure-plan';

function shortfall(err: unknown): Shortfall | null {
  if (!(err instanceof WarrenError) || err.code !== 'INSUFFICIENT_CAPACITY') return null;
  const d = (err.details ?? {}) as { short_used_mb?: number; short_reserved_mb?: number };
  return { usedMb: d.short_used_mb ?? 0, reservedMb: d.short_reserved_mb ?? 0 };
}

export interface PressureLog {
  info(o: object, msg: string): void;
}

export class MemoryPressure {
  /** Where the ladder's steps are reported (the API's log, once there is one). */
  log: PressureLog = { info: () => undefined };

  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
    private readonly config: Config,
    private readonly lifecycle: SandboxLifecycle,
  ) {}

  /** Runs `attempt` (a host create or wake of `id`), freeing memory and retrying as above. */
  async admitting<T>(id: string, attempt: () => Promise<T>): Promise<T> {
    try {
      return await attempt();
    } catch (err) {
      let short = shortfall(err);
      if (!short) throw err;
      let idle = await this.idle(id);
      if (reclaimMayHelp(short, idle.length)) {
        let freed = 0;
        for (const row of idle)
          freed += (await this.host.sandboxes.reclaim(row.id).catch(() => null)) ?? 0;
        this.log.info({ sandbox: id, freed_mb: freed }, 'memory pressure: reclaimed');
        try {
          return await attempt();
        } catch (again) {
          short = shortfall(again);
          if (!short) throw again;
          err = again;
        }
        idle = await this.idle(id);
      }
      const candidates = await Promise.all(
        idle.map(async (row) => {
          const u = await this.host.sandboxes.usage(row.id).catch(() => null);
          const usedMb = u?.memory_bytes != null ? u.memory_bytes / 1048576 : row.memory_mb;
          return {
            id: row.id,
            lastActivityAt: row.last_activity_at,
            usedMb: Math.max(usedMb, this.config.memoryStartMb),
            memoryMb: row.memory_mb,
          };
        }),
      );
      const victims = pickVictims(short, candidates);
      if (!victims) throw err;
      for (const victim of victims) await this.hibernate(idle.find((r) => r.id === victim)!);
      this.log.info({ sandbox: id, hibernated: victims }, 'memory pressure: hibernated');
      return attempt();
    }
  }

  private async idle(exclude: string): Promise<SandboxRecord[]> {
    const rows = await this.store.sandboxesOnHost(this.host.id, ['running', 'paused']);
    return idleRows(rows, {
      now: this.lifecycle.clock(),
      idleSeconds: this.config.pressureIdleSeconds,
      busy: (sid) => this.lifecycle.hasOperations(sid),
      exclude,
    });
  }

  /** Unless it was used meanwhile; a sandbox that changed state is left as it is. */
  private async hibernate(row: SandboxRecord): Promise<void> {
    await this.lifecycle.hibernateUnused(row, 'memory pressure').catch(() => undefined);
  }
}
