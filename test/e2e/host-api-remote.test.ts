/**
 * The HostApi contract over the network transport: the in-process agent on
 * real gVisor, served by serveHostApi on loopback and reached through
 * connectRemoteHost. Closing the HostApi the contract gets also stops the
 * server and the agent under it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { HostApi } from '@warren/protocol';
import { createHostAgent } from '../../packages/host-agent/src/agent';
import { serveHostApi, type ServedHost } from '../../packages/host-agent/src/remote/serve';
import { hostAgentConfig, loadConfig } from '../../packages/server/src/config';
import { connectRemoteHost } from '../../packages/server/src/hosts/remote-host';
import { RUNSC, TEMPLATES_DIR } from '../fixture';
import { hostApiContract } from '../host-api/contract';

const homes: string[] = [];
const open = new Set<HostApi>();

async function openRemote(home: string): Promise<HostApi> {
  let served: ServedHost | null = null;
  const agent = await createHostAgent({
    ...hostAgentConfig(
      loadConfig(
        {},
        {
          hostId: 'host_contract',
          home,
          templatesDir: TEMPLATES_DIR,
          runsc: RUNSC,
          memoryBudgetMb: 2048,
          memoryOvercommit: 1,
        },
      ),
    ),
    onEgressEvent: (sandboxId, e) => served?.emitEgress(sandboxId, e),
  });
  const credential = randomBytes(32).toString('hex');
  try {
    served = await serveHostApi(agent, { credential, listen: { host: '127.0.0.1', port: 0 } });
    const remote = await connectRemoteHost({
      id: agent.id,
      url: served.url,
      credential,
      onEgressEvent: () => undefined,
    });
    const server = served;
    const host: HostApi = {
      ...remote,
      async close(o) {
        open.delete(host);
        try {
          // A destroy goes over the wire; a plain close leaves the sandboxes running.
          await remote.close(o);
        } finally {
          await server.close();
          if (!o?.destroy) await agent.close();
        }
      },
    };
    open.add(host);
    return host;
  } catch (err) {
    await served?.close();
    await agent.close({ destroy: true });
    throw err;
  }
}

hostApiContract('agent over the network transport (gVisor)', {
  template: 'base',
  home() {
    const home = mkdtempSync('/tmp/wh-');
    homes.push(home);
    return home;
  },
  open: openRemote,
  async cleanup() {
    // Whatever a failed check left open is destroyed before its home is removed.
    for (const host of [...open]) await host.close({ destroy: true }).catch(() => undefined);
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  },
});
