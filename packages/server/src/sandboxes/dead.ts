/**
 * Sandboxes whose runtime died while Warren ran: the host no longer lists
 * them as running or paused, but their record says they are. Each is
 * recorded stopped, with the cause `out of memory` when the host's OOM
 * killer killed it (gVisor: the sentry past the memory cgroup's limit; see
 * the host's oomKilled), else `lost`. A sandbox must be missing on two
 * sweeps in a row, and still be running or paused under its lock, so that a
 * hibernation or a stop under way is never taken for a death.
 */
import type { HostApi } from '@warren/protocol';
import type { Store } from '../store/store';
import type { SandboxLifecycle } from './lifecycle';
import { hostIds } from '../hosts/router';

export const OUT_OF_MEMORY = 'out of memory';

export class DeadSandboxes {
  private missing = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
    private readonly lifecycle: SandboxLifecycle,
  ) {}

  /** Records the dead sandboxes stopped; returns them with their cause. */
  async reap(): Promise<Array<{ id: string; cause: string }>> {
    const rows = await this.store.sandboxesOnHost(hostIds(this.host), ['running', 'paused']);
    const live = new Set(await this.host.sandboxes.live());
    const gone = rows.filter((r) => !live.has(r.id)).map((r) => r.id);
    const confirmed = gone.filter((id) => this.missing.has(id));
    this.missing = new Set(gone);
    const reaped: Array<{ id: string; cause: string }> = [];
    for (const id of confirmed) {
      const cause = await this.lifecycle.locked(id, async () => {
        const row = await this.store.getSandboxById(id);
        if (row?.state !== 'running' && row?.state !== 'paused') return null;
        if ((await this.host.sandboxes.live()).includes(id)) return null;
        const oom = await this.host.sandboxes.oomKilled(id).catch(() => false);
        const why = oom ? OUT_OF_MEMORY : 'lost';
        await this.lifecycle.stopped(id, why);
        return why;
      });
      if (cause) reaped.push({ id, cause });
      this.missing.delete(id);
    }
    return reaped;
  }
}
