/** The HostApi contract against the in-process host agent, on real gVisor. */
import { mkdtempSync, rmSync } from 'node:fs';
import { createHostAgent } from '@warren/host-agent';
import { hostAgentConfig, loadConfig } from '../../packages/server/src/config';
import { RUNSC, TEMPLATES_DIR } from '../fixture';
import { hostApiContract } from '../host-api/contract';

const homes: string[] = [];

hostApiContract('in-process agent (gVisor)', {
  template: 'base',
  home() {
    const home = mkdtempSync('/tmp/wh-');
    homes.push(home);
    return home;
  },
  open: (home) =>
    createHostAgent(
      hostAgentConfig(
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
    ),
  async cleanup() {
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  },
});
