/**
 * Hosts that joined only in the store and the router: a row in `hosts` with
 * the capacity and templates given, and a HostApi the router takes as its
 * connection. For placement benches and for unit tests of placement logic;
 * nothing here runs sandboxes.
 */
import type { HostApi, HostCapacity } from '@warren/protocol';
import type { HostService } from '../packages/server/src/hosts/service';

export async function joinFakeHost(
  hosts: HostService,
  api: HostApi,
  o: { capacity: HostCapacity; templates: string[]; version: string; reason: string },
): Promise<void> {
  await hosts.queries.insert({
    id: api.id,
    url: 'http://127.0.0.1:9',
    credential: 'x',
    state: 'active',
    epoch: 1,
    lease_expires_at: Date.now() + 3_600_000,
    joined_at: new Date().toISOString(),
    last_heartbeat_at: null,
    capacity: JSON.stringify(o.capacity),
    info: JSON.stringify({ version: o.version, templates: o.templates }),
    state_reason: o.reason,
  });
  hosts.router.connect(api);
}
