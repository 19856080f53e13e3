import type { Socket } from 'node:net';

/**
 * The one interface every sandbox runtime implements (gVisor today; microVM
 * drivers slot in here). The rest of Warren never imports a driver directly:
 * it gets one from the factory in ./index.ts.
 */

/** See RuntimeDriver.setCpuWeight. */
export type CpuWeight = 'idle' | 'normal';

export interface SandboxSpec {
  /** Runtime container id (the sandbox id). */
  id: string;
  /** Read-only root filesystem directory, shared by every sandbox of a template. */
  rootfs: string;
  /** Host directory with the guest agent and its Node.js runtime, mounted read-only at /opt/warren. */
  guestDir: string;
  /** Host directory that holds the agent channel socket, mounted at /run/warren. */
  channelDir: string;
  /** Per-sandbox working directory of the driver (bundle, logs). */
  workDir: string;
  /**
   * Host directory for the file that holds what the sandbox writes to its
   * root (see capabilities.diskLimit); without it, writes are kept in memory.
   */
  filestoreDir?: string;
  /** Host directory mounted at GUEST_VOLUMES_DIR, with the attached volumes in it. */
  volumesDir?: string;
  cpu: number;
  memoryMb: number;
  hostname: string;
  /** Environment of the guest agent (the sandbox's first process). */
  env: Record<string, string>;
}

export interface DriverCapabilities {
  /** Can save a running sandbox to an image and restore copies of it. */
  checkpoint: boolean;
  /** Can freeze and thaw a sandbox's CPU in place. */
  pause: boolean;
  /** How sandboxes reach the network: not at all, or through a per-sandbox netstack. */
  network: 'none' | 'netstack';
  /** Keeps written files in spec.filestoreDir, so a size-limited file system there caps them. */
  diskLimit: boolean;
  /**
   * Sandboxes are isolated from the host, so they may be given the host's
   * egress proxy and its CA. False for a driver that runs guests as host
   * processes: those must not touch the host's proxy settings or trust store.
   */
  egress: boolean;
}

/**
 * Where the host meets a sandbox's guest agent. The guest dials out (a
 * sandbox cannot be checkpointed while it listens on a host socket): its
 * control connection, then one data connection per transfer. A Unix socket
 * in the channel directory for gVisor; a microVM driver puts vsock here.
 */
export interface GuestEndpoint {
  listen(handlers: { control(socket: Socket): void; data(socket: Socket): void }): Promise<void>;
  /** Stops accepting and removes what the guest dials: no host socket stays bound. */
  close(): Promise<void>;
}

export interface RuntimeDriver {
  readonly name: string;
  readonly capabilities: DriverCapabilities;
  version(): Promise<string>;
  /** Cold-boots a sandbox (used to bake template snapshots). */
  boot(spec: SandboxSpec): Promise<void>;
  /**
   * Starts a sandbox from a checkpoint image; the spec's mounts must match the
   * image's. It runs without the spec's CPU quota: a restore is the runtime's
   * work for the whole sandbox, more than one CPU's worth. The caller holds
   * it to spec.cpu with limitCpu once the guest agent has answered, before
   * any user request reaches it.
   */
  restore(spec: SandboxSpec, imageDir: string): Promise<void>;
  /** Holds a running sandbox to `cpu` CPUs (a CFS quota); throws RUNTIME_ERROR when it cannot. */
  limitCpu(id: string, cpu: number): Promise<void>;
  /**
   * The sandbox's share of the CPU when the host's CPUs are all busy: `idle`
   * a small weight (it still runs on any CPU that is free), `normal` the
   * default. Throws RUNTIME_ERROR when it cannot.
   */
  setCpuWeight(id: string, weight: CpuWeight): Promise<void>;
  /**
   * Saves the sandbox into imageDir. The sandbox is stopped afterwards, unless
   * leaveRunning: then it goes on running (a capture for snapshots and forks).
   */
  checkpoint(id: string, imageDir: string, opts?: { leaveRunning?: boolean }): Promise<void>;
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  /** Stops a sandbox at once: none of its processes runs afterwards. Removal may follow later. */
  kill(id: string): Promise<void>;
  /** Stops and removes a sandbox and everything the runtime holds for it; safe to repeat. */
  destroy(id: string): Promise<void>;
  /** CPU time used by the sandbox so far, in nanoseconds; null when unknown. */
  cpuUsageNs(id: string): Promise<number | null>;
  /** Memory charged to the sandbox now, in bytes; null when unknown. */
  memoryBytes(id: string): Promise<number | null>;
  /**
   * Takes back what the host can of the sandbox's memory without stopping
   * any of its processes; returns the bytes freed, null when it cannot.
   */
  reclaim(id: string): Promise<number | null>;
  /** How often the host's OOM killer killed a process of the sandbox; null when unknown. */
  oomKills(id: string): Promise<number | null>;
  /**
   * Ids of the sandboxes that are running or paused (for reconciliation after
   * a restart); with `all`, also those stopped that the runtime still holds.
   */
  list(o?: { all?: boolean }): Promise<string[]>;
  /** How the host reaches the guest agent of the sandbox with this spec. */
  guestEndpoint(spec: Pick<SandboxSpec, 'channelDir'>): GuestEndpoint;
}
