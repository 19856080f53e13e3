/** Egress policy of sandboxes and their egress log. */
import {
  WarrenError,
  type EgressEvent,
  type HostApi,
  type NetworkPolicy,
  type SandboxNetwork,
} from '@warren/protocol';
import type { Store } from '../store/store';
import type { SandboxLifecycle } from './lifecycle';

export class NetworkService {
  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
    private readonly lifecycle: SandboxLifecycle,
  ) {}

  async get(orgId: string, id: string): Promise<SandboxNetwork> {
    return (await this.lifecycle.row(orgId, id)).network;
  }

  /**
   * Replaces the egress policy (and, when given, the secrets) of a sandbox.
   * A running or paused one gets it at once; a hibernated one when it wakes.
   */
  async set(
    orgId: string,
    id: string,
    change: { policy: NetworkPolicy; secrets?: SandboxNetwork['secrets'] },
  ): Promise<SandboxNetwork> {
    return this.lifecycle.locked(id, async () => {
      const row = await this.lifecycle.row(orgId, id);
      if (row.state === 'stopped' || row.state === 'stopping')
        throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is ${row.state}`);
      const network = { policy: change.policy, secrets: change.secrets ?? row.network.secrets };
      await this.host.sandboxes.checkNetwork(network);
      await this.store.updateSandbox(id, { network });
      if (row.state === 'running' || row.state === 'paused')
        await this.host.sandboxes.setNetwork(id, network);
      return network;
    });
  }

  async egressLog(
    orgId: string,
    id: string,
    q: { decision?: string; limit: number; before?: number },
  ): Promise<EgressEvent[]> {
    await this.lifecycle.row(orgId, id);
    const rows = await this.store.egressEvents(id, q);
    return rows.map(({ sandbox_id, ...e }) => ({
      ...e,
      protocol: e.protocol as EgressEvent['protocol'],
      decision: e.decision as EgressEvent['decision'],
    }));
  }

  /** Stores an egress decision the host reported. */
  record(sandboxId: string, e: Omit<EgressEvent, 'id'>): void {
    void this.store.insertEgressEvent({ sandbox_id: sandboxId, ...e }).catch(() => undefined);
  }
}
