/** What the parts of one host agent share; built once by createHostAgent (agent.ts). */
import type { EgressProxy } from './network/egress-proxy';
import type { RuntimeDriver } from './runtime/driver';
import type { SnapshotStore } from './snapshots';
import type { DiskPool } from './storage/disk-pool';
import type { HostVolumes } from './storage/host-volumes';
import type { TemplateCatalog } from './templates/catalog';
import type { GuestBundle } from './templates/guest-bundle';
import type { SandboxRegistry } from './sandboxes/registry';

export interface HostContext {
  hostId: string;
  /** Per-sandbox state: work directory, channel, disk, hibernation image. */
  sandboxesDir: string;
  /** Scratch space for captures and snapshot restores. */
  scratchDir: string;
  readyTimeoutMs: number;
  driver: RuntimeDriver;
  /** `<driver> <version>`: templates are baked again when it changes. */
  runtimeVersion: string;
  registry: SandboxRegistry;
  catalog: TemplateCatalog;
  volumes: HostVolumes;
  /** Sandbox disks made ahead of time; null where the driver limits no disk. */
  diskPool: DiskPool | null;
  snapshots: SnapshotStore;
  /** The host-side egress proxy; without it sandboxes reach nothing outside. */
  egress: EgressProxy | null;
  guestBundle(): Promise<GuestBundle>;
}
