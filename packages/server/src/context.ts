import type { HostAgent } from '@warren/host-agent';
import type { Config } from './config';
import type { SandboxService } from './sandbox-service';
import type { Store } from './store/store';
import type { VolumeService } from './volume-service';

/** What route modules need; built once in platform.ts. */
export interface AppContext {
  config: Config;
  store: Store;
  host: HostAgent;
  sandboxes: SandboxService;
  volumes: VolumeService;
  runtimeVersion: string;
  version: string;
  startedAt: number;
}
