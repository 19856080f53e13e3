/** After a restart: reattach to running sandboxes, mark the ones that are gone. */
import type { HostApi } from '@warren/protocol';
import type { SandboxRecord, Store } from '../store/store';
import type { SandboxLifecycle } from './lifecycle';

export async function reconcileSandboxes(
  store: Store,
  host: HostApi,
  lifecycle: SandboxLifecycle,
): Promise<void> {
  const rows = await store.sandboxesOnHost(host.id, ['creating', 'running', 'paused', 'stopping']);
  const live = (r: SandboxRecord) => r.state === 'running' || r.state === 'paused';
  const hibernated = await store.sandboxesOnHost(host.id, ['hibernated']);
  const lost = new Set(
    await host.sandboxes.reconcile(
      rows.filter(live).map((r) => ({
        id: r.id,
        memory_mb: r.memory_mb,
        env: r.env,
        network: r.network,
        paused: r.state === 'paused',
      })),
      hibernated.map((r) => r.id),
    ),
  );
  for (const row of rows) {
    if (live(row) && !lost.has(row.id)) continue;
    await lifecycle.stopped(row.id, live(row) ? 'lost' : `interrupted while ${row.state}`);
  }
}
