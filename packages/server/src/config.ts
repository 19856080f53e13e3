/** Configuration from the environment (WARREN_*), with overrides for tests and `warren up`. */
import { availableParallelism, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DriverName, HostAgentConfig, S3StoreConfig } from '@warren/host-agent';
import { LSP_IDLE_SECONDS, type NetworkPolicy } from '@warren/protocol';
import { loadAuthConfig, type AuthConfig } from './auth-config';

export const REPO_ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));

export interface Config extends AuthConfig {
  /** State directory: database, admin token, sandboxes, templates. */
  home: string;
  /**
   * The store in PostgreSQL (WARREN_DATABASE_URL, postgres://...); null keeps it in
   * SQLite at $WARREN_HOME/warren.db.
   */
  databaseUrl: string | null;
  host: string;
  port: number;
  templatesDir: string;
  /** The runsc binary (WARREN_RUNSC); by default the host agent finds the one setup installed. */
  runsc?: string;
  driver: DriverName;
  hostId: string;
  /** Memory sandboxes may really use on the host (WARREN_MEMORY_BUDGET_MB). */
  memoryBudgetMb: number;
  /** memory_mb of live sandboxes may add up to budget x this (WARREN_MEMORY_OVERCOMMIT). */
  memoryOvercommit: number;
  /** What a new sandbox counts in admission until measured (WARREN_MEMORY_START_MB). */
  memoryStartMb: number;
  /** Idle this long, a sandbox may be hibernated to make room (WARREN_PRESSURE_IDLE_SECONDS). */
  pressureIdleSeconds: number;
  /**
   * Idle sandboxes kept awake per host; the least recently used beyond it
   * hibernate (WARREN_IDLE_AWAKE_MAX; 0: no limit). An idle sandbox still
   * costs CPU in the runtime (sandboxes/sweeps.ts).
   */
  idleAwakeMax: number;
  defaultTtlSeconds: number;
  /** Persistent sandboxes hibernate after this long idle unless they say otherwise. */
  defaultIdleTimeoutSeconds: number;
  /** Terminal sessions without a viewer are killed after this long (WARREN_PTY_IDLE_TIMEOUT_SECONDS). */
  ptyIdleTimeoutSeconds: number;
  /** Warm language servers of the compact LSP calls stop after this long unused (WARREN_LSP_IDLE_SECONDS). */
  lspIdleSeconds: number;
  /** A sandbox using more CPU than this (percent of one CPU, between sweeps) is not idle. */
  idleCpuPercent: number;
  /**
   * Idle this long, a running sandbox gets a small CPU weight until its next
   * request (WARREN_IDLE_CPU_WEIGHT_SECONDS; 0: never).
   */
  idleCpuWeightSeconds: number;
  sweepIntervalMs: number;
  /** How long a joined host's lease lasts without a heartbeat (agents heartbeat at a third of it). */
  hostLeaseMs: number;
  /** How often a control plane that does not lead the background work tries to (PostgreSQL store). */
  leaderRetryMs: number;
  /** PEM file of the CA (or certificate) that joined agents' HTTPS certificates are checked against. */
  agentCaFile: string | null;
  /** How long stopped sandboxes stay visible before their records are purged. */
  stoppedRetentionSeconds: number;
  readyTimeoutMs: number;
  debianMirror: string;
  /** Templates built (if missing) and baked at start. */
  templates: string[];
  logLevel: string;
  /** The built web dashboard (packages/dashboard/dist), served at `/`; null serves none. */
  dashboardDir: string | null;
  /** Where snapshot images are kept: under home, or in an S3-compatible bucket (cached under home). */
  snapshotStore: { kind: 'local' } | ({ kind: 's3' } & S3StoreConfig);
  /** Destroy every sandbox on close (tests); by default sandboxes outlive a restart. */
  destroyOnClose: boolean;
  /** Preview URLs are `{port}-{sandbox id}.<previewDomain>`, routed by the Host header. */
  previewDomain: string;
  /** How preview URLs are shown (`{port}`, `{id}`); by default http, the domain and the API port. */
  previewUrl?: string;
  /** Egress policy of sandboxes created without one (WARREN_NETWORK_DEFAULT, JSON). */
  networkDefault: NetworkPolicy;
  /** JSON file of allowlist presets to add or replace (WARREN_NETWORK_PRESETS_FILE). */
  networkPresetsFile: string | null;
  /** Hosts-format file that overrides name resolution for egress (WARREN_EGRESS_HOSTS_FILE). */
  egressHostsFile: string | null;
  /** PEM files of CAs trusted for upstream TLS besides the system's (WARREN_EGRESS_CA_FILES). */
  egressCaFiles: string[];
  /** Comma-separated CIDRs blocked for every sandbox besides the built-in ones. */
  egressBlock: string;
  /** Comma-separated CIDRs the built-in blocks are lifted from (a mirror on the host). */
  egressUnblock: string;
  /** Largest volume, in MiB. */
  volumeMaxMb: number;
  /** Most volumes one sandbox may attach. */
  volumesPerSandbox: number;
  /** Databases: the front door's port (WARREN_DB_PORT, default 5433; 0 picks a free one). */
  dbPort: number;
  /** Address the front door listens on (WARREN_DB_LISTEN; default: the API's). */
  dbListen?: string;
  /** Host name in connection URLs, and in the server certificate (WARREN_DB_HOST). */
  dbHost: string;
  /** SNI routing: `<endpoint>.<dbDomain>` (WARREN_DB_DOMAIN, default db.localhost). */
  dbDomain: string;
  /** Seconds between base backups of each database (WARREN_DB_BACKUP_INTERVAL_SECONDS). */
  dbBackupIntervalSeconds: number;
  /** How often WAL files waiting in databases' outboxes are collected into the archive. */
  dbArchivePollMs: number;
  /** Archive lag past which database.archive_lag_exceeded is sent (WARREN_DB_ARCHIVE_LAG_SECONDS). */
  dbArchiveLagSeconds: number;
  /** How often databases are checked for crashes and for scale to zero. */
  dbWatchIntervalMs: number;
  /** How often each live sandbox's usage is sampled (WARREN_USAGE_SAMPLE_MS). */
  usageSampleMs: number;
  /** How long usage samples are kept; hourly totals stay (WARREN_USAGE_RETENTION_SECONDS). */
  usageRetentionSeconds: number;
  /** Multiplies the webhook retry schedule (WARREN_WEBHOOK_RETRY_SCALE; 1 = about a day). */
  webhookRetryScale: number;
  /** How long a receiver has to answer one delivery (WARREN_WEBHOOK_TIMEOUT_MS). */
  webhookTimeoutMs: number;
  /** An endpoint failing every attempt this long is disabled (WARREN_WEBHOOK_DISABLE_AFTER_SECONDS). */
  webhookDisableAfterSeconds: number;
  /** How long a rotated-out secret keeps signing (WARREN_WEBHOOK_SECRET_GRACE_SECONDS). */
  webhookSecretGraceSeconds: number;
}

function networkPolicy(value: string | undefined): NetworkPolicy {
  if (value === undefined || value === '') return { mode: 'none' };
  try {
    return JSON.parse(value) as NetworkPolicy;
  } catch {
    throw new Error(`WARREN_NETWORK_DEFAULT is not JSON: ${value}`);
  }
}

function int(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`invalid number in configuration: ${value}`);
  return n;
}

/** `fake` runs guest agents on the host without isolation: for unit tests only. */
function driverName(value: string | undefined): DriverName {
  if (value === undefined || value === '' || value === 'gvisor') return 'gvisor';
  if (value === 'fake') return 'fake';
  throw new Error(
    `WARREN_DRIVER must be gvisor (or fake, for unit tests only), not ${JSON.stringify(value)}`,
  );
}

function snapshotStore(env: NodeJS.ProcessEnv): Config['snapshotStore'] {
  const kind = env.WARREN_SNAPSHOT_STORE ?? 'local';
  if (kind === 'local') return { kind: 'local' };
  if (kind !== 's3')
    throw new Error(`WARREN_SNAPSHOT_STORE must be local or s3, not ${JSON.stringify(kind)}`);
  if (!env.WARREN_S3_BUCKET) throw new Error('WARREN_SNAPSHOT_STORE=s3 needs WARREN_S3_BUCKET');
  return {
    kind: 's3',
    bucket: env.WARREN_S3_BUCKET,
    prefix: env.WARREN_S3_PREFIX ?? 'warren/',
    endpoint: env.WARREN_S3_ENDPOINT || undefined,
    region: env.WARREN_S3_REGION ?? env.AWS_REGION ?? 'us-east-1',
    accessKeyId: env.WARREN_S3_ACCESS_KEY_ID ?? env.AWS_ACCESS_KEY_ID,
    secretAccessKey: env.WARREN_S3_SECRET_ACCESS_KEY ?? env.AWS_SECRET_ACCESS_KEY,
    collectGraceSeconds: int(env.WARREN_S3_COLLECT_GRACE_SECONDS, 3600),
  };
}

/** 75% of the host's memory, leaving room for the host itself. */
export function defaultMemoryBudgetMb(): number {
  return Math.floor((totalmem() / 1024 / 1024) * 0.75);
}

export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Config> = {},
): Config {
  const home = overrides.home ?? env.WARREN_HOME ?? join(env.HOME ?? '/root', '.warren');
  const config: Config = {
    home,
    databaseUrl: env.WARREN_DATABASE_URL || null,
    // Loopback unless told otherwise: the API is plain HTTP unless WARREN_TLS* says otherwise.
    host: env.WARREN_HOST ?? '127.0.0.1',
    port: int(env.WARREN_PORT, 8080),
    templatesDir: env.WARREN_TEMPLATES_DIR ?? join(home, 'templates'),
    runsc: env.WARREN_RUNSC || undefined,
    driver: driverName(env.WARREN_DRIVER),
    hostId: env.WARREN_HOST_ID ?? 'host_local',
    memoryBudgetMb: int(env.WARREN_MEMORY_BUDGET_MB, defaultMemoryBudgetMb()),
    memoryOvercommit: int(env.WARREN_MEMORY_OVERCOMMIT, 8),
    memoryStartMb: int(env.WARREN_MEMORY_START_MB, 64),
    pressureIdleSeconds: int(env.WARREN_PRESSURE_IDLE_SECONDS, 60),
    idleAwakeMax: int(env.WARREN_IDLE_AWAKE_MAX, 8 * availableParallelism()),
    defaultTtlSeconds: int(env.WARREN_DEFAULT_TTL_SECONDS, 3600),
    defaultIdleTimeoutSeconds: int(env.WARREN_DEFAULT_IDLE_TIMEOUT_SECONDS, 300),
    idleCpuPercent: int(env.WARREN_IDLE_CPU_PERCENT, 15),
    idleCpuWeightSeconds: int(env.WARREN_IDLE_CPU_WEIGHT_SECONDS, 30),
    ptyIdleTimeoutSeconds: int(env.WARREN_PTY_IDLE_TIMEOUT_SECONDS, 3600),
    lspIdleSeconds: int(env.WARREN_LSP_IDLE_SECONDS, LSP_IDLE_SECONDS),
    sweepIntervalMs: int(env.WARREN_SWEEP_INTERVAL_MS, 5000),
    hostLeaseMs: int(env.WARREN_HOST_LEASE_SECONDS, 30) * 1000,
    leaderRetryMs: int(env.WARREN_LEADER_RETRY_SECONDS, 5) * 1000,
    agentCaFile: env.WARREN_AGENT_CA_FILE || null,
    stoppedRetentionSeconds: int(env.WARREN_STOPPED_RETENTION_SECONDS, 7 * 24 * 3600),
    readyTimeoutMs: int(env.WARREN_READY_TIMEOUT_MS, 15000),
    debianMirror: env.WARREN_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian',
    templates: (env.WARREN_TEMPLATES ?? 'base').split(',').filter(Boolean),
    logLevel: env.WARREN_LOG_LEVEL ?? 'info',
    dashboardDir:
      env.WARREN_DASHBOARD_DIR === ''
        ? null
        : (env.WARREN_DASHBOARD_DIR ??
          fileURLToPath(new URL('../../dashboard/dist', import.meta.url))),
    snapshotStore: snapshotStore(env),
    destroyOnClose: env.WARREN_DESTROY_ON_CLOSE === '1',
    previewDomain: (env.WARREN_PREVIEW_DOMAIN || 'localhost')
      .toLowerCase()
      .replace(/^\.+|\.+$/g, ''),
    previewUrl: env.WARREN_PREVIEW_URL || undefined,
    networkDefault: networkPolicy(env.WARREN_NETWORK_DEFAULT),
    networkPresetsFile: env.WARREN_NETWORK_PRESETS_FILE || null,
    egressHostsFile: env.WARREN_EGRESS_HOSTS_FILE || null,
    egressCaFiles: (env.WARREN_EGRESS_CA_FILES ?? '').split(',').filter(Boolean),
    egressBlock: env.WARREN_EGRESS_BLOCK ?? '',
    egressUnblock: env.WARREN_EGRESS_UNBLOCK ?? '',
    volumeMaxMb: int(env.WARREN_VOLUME_MAX_MB, 10240),
    volumesPerSandbox: int(env.WARREN_VOLUMES_PER_SANDBOX, 4),
    dbPort: int(env.WARREN_DB_PORT, 5433),
    dbListen: env.WARREN_DB_LISTEN || undefined,
    dbHost: env.WARREN_DB_HOST || 'localhost',
    dbDomain: (env.WARREN_DB_DOMAIN || 'db.localhost').toLowerCase(),
    dbBackupIntervalSeconds: int(env.WARREN_DB_BACKUP_INTERVAL_SECONDS, 24 * 3600),
    dbArchivePollMs: int(env.WARREN_DB_ARCHIVE_POLL_MS, 500),
    dbArchiveLagSeconds: int(env.WARREN_DB_ARCHIVE_LAG_SECONDS, 300),
    dbWatchIntervalMs: int(env.WARREN_DB_WATCH_INTERVAL_MS, 2000),
    usageSampleMs: int(env.WARREN_USAGE_SAMPLE_MS, 5000),
    usageRetentionSeconds: int(env.WARREN_USAGE_RETENTION_SECONDS, 24 * 3600),
    ...loadAuthConfig(env),
    webhookRetryScale: int(env.WARREN_WEBHOOK_RETRY_SCALE, 1),
    webhookTimeoutMs: int(env.WARREN_WEBHOOK_TIMEOUT_MS, 10_000),
    webhookDisableAfterSeconds: int(env.WARREN_WEBHOOK_DISABLE_AFTER_SECONDS, 5 * 24 * 3600),
    webhookSecretGraceSeconds: int(env.WARREN_WEBHOOK_SECRET_GRACE_SECONDS, 24 * 3600),
    ...overrides,
  };
  return config;
}

/** What the host agent of a single-node platform is started with. */
export function hostAgentConfig(config: Config): HostAgentConfig {
  return {
    hostId: config.hostId,
    home: config.home,
    templatesDir: config.templatesDir,
    driver: config.driver,
    runsc: config.runsc,
    memoryBudgetMb: config.memoryBudgetMb,
    memoryOvercommit: config.memoryOvercommit,
    memoryStartMb: config.memoryStartMb,
    idleCpuWeightSeconds: config.idleCpuWeightSeconds,
    idleCpuPercent: config.idleCpuPercent,
    debianMirror: config.debianMirror,
    readyTimeoutMs: config.readyTimeoutMs,
    snapshotStore: config.snapshotStore,
    egress: {
      defaultPolicy: config.networkDefault,
      presetsFile: config.networkPresetsFile,
      hostsFile: config.egressHostsFile,
      caFiles: config.egressCaFiles,
      block: config.egressBlock,
      unblock: config.egressUnblock,
    },
  };
}
