/** What a host agent is started with. The control plane passes it; `warren agent` will too. */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NetworkPolicy } from '@warren/protocol';
import type { EgressRecord } from './network/egress-proxy';
import type { DriverName } from './runtime';
import type { S3StoreConfig } from './snapshots';

export interface HostAgentConfig {
  hostId: string;
  /** This host's state: sandboxes, runtime state, volumes, snapshot cache, egress CA. */
  home: string;
  templatesDir: string;
  driver: DriverName;
  /** The runsc binary; by default the one setup installs, else `runsc` on PATH. */
  runsc?: string;
  /** Memory the sandboxes of this host may really use, as their cgroups measure it. */
  memoryBudgetMb: number;
  /** The memory_mb of the live sandboxes may add up to this many times the budget (default 8). */
  memoryOvercommit?: number;
  /** What a sandbox counts until (and at least while) it is measured, in MiB (default 64). */
  memoryStartMb?: number;
  /**
   * A live sandbox idle this long (no request, port connection, terminal or
   * egress bytes, CPU under idleCpuPercent) gets a small CPU weight until its
   * next request (default 30; 0: never). See sandboxes/cpu-weights.ts.
   */
  idleCpuWeightSeconds?: number;
  /** A sandbox using more than this percent of one CPU is not idle (default 15). */
  idleCpuPercent?: number;
  debianMirror: string;
  /** How long a restored guest agent may take to dial in. */
  readyTimeoutMs: number;
  /** Snapshot images: under home, or in an S3-compatible bucket cached under home. */
  snapshotStore: { kind: 'local' } | ({ kind: 's3' } & S3StoreConfig);
  egress: {
    /** Checked at start: a bad default is a start-up error, not a failure of every create. */
    defaultPolicy: NetworkPolicy;
    /** JSON file of allowlist presets to add or replace. */
    presetsFile: string | null;
    /** Hosts-format file that overrides name resolution. */
    hostsFile: string | null;
    /** PEM files of CAs trusted for upstream TLS besides the system's. */
    caFiles: string[];
    /** Comma-separated CIDRs blocked for every sandbox besides the built-in ones. */
    block: string;
    /** Comma-separated CIDRs the built-in blocks are lifted from. */
    unblock: string;
  };
  /** Every egress decision, as it happens (the control plane stores them). */
  onEgressEvent?: (sandboxId: string, event: EgressRecord) => void;
}

const REPO_ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));

/** The runsc that setup.sh installs into the checkout's .state/bin, else the one on PATH. */
export function defaultRunsc(): string {
  const bundled = join(REPO_ROOT, '.state/bin/runsc');
  return existsSync(bundled) ? bundled : 'runsc';
}
