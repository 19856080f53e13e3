/** Configuration from the environment (WARREN_*), with overrides for tests and `warren up`. */
import { existsSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DriverName } from '@warren/host-agent';

export const REPO_ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));

export interface Config {
  /** State directory: database, admin token, sandboxes, templates. */
  home: string;
  host: string;
  port: number;
  templatesDir: string;
  runsc: string;
  driver: DriverName;
  hostId: string;
  memoryBudgetMb: number;
  defaultTtlSeconds: number;
  sweepIntervalMs: number;
  /** How long stopped sandboxes stay visible before their records are purged. */
  stoppedRetentionSeconds: number;
  readyTimeoutMs: number;
  debianMirror: string;
  /** Templates built (if missing) and baked at start. */
  templates: string[];
  logLevel: string;
  /** Destroy every sandbox on close (tests); by default sandboxes outlive a restart. */
  destroyOnClose: boolean;
  /** Largest volume, in MiB. */
  volumeMaxMb: number;
  /** Most volumes one sandbox may attach. */
  volumesPerSandbox: number;
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

/** 75% of the host's memory, leaving room for the host itself. */
export function defaultMemoryBudgetMb(): number {
  return Math.floor((totalmem() / 1024 / 1024) * 0.75);
}

export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Config> = {},
): Config {
  const home = overrides.home ?? env.WARREN_HOME ?? join(env.HOME ?? '/root', '.warren');
  const bundledRunsc = join(REPO_ROOT, '.state/bin/runsc');
  const config: Config = {
    home,
    // Loopback unless told otherwise: the API is plain HTTP (put TLS in front to expose it).
    host: env.WARREN_HOST ?? '127.0.0.1',
    port: int(env.WARREN_PORT, 8080),
    templatesDir: env.WARREN_TEMPLATES_DIR ?? join(home, 'templates'),
    runsc: env.WARREN_RUNSC ?? (existsSync(bundledRunsc) ? bundledRunsc : 'runsc'),
    driver: driverName(env.WARREN_DRIVER),
    hostId: env.WARREN_HOST_ID ?? 'host_local',
    memoryBudgetMb: int(env.WARREN_MEMORY_BUDGET_MB, defaultMemoryBudgetMb()),
    defaultTtlSeconds: int(env.WARREN_DEFAULT_TTL_SECONDS, 3600),
    sweepIntervalMs: int(env.WARREN_SWEEP_INTERVAL_MS, 5000),
    stoppedRetentionSeconds: int(env.WARREN_STOPPED_RETENTION_SECONDS, 7 * 24 * 3600),
    readyTimeoutMs: int(env.WARREN_READY_TIMEOUT_MS, 15000),
    debianMirror: env.WARREN_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian',
    templates: (env.WARREN_TEMPLATES ?? 'base').split(',').filter(Boolean),
    logLevel: env.WARREN_LOG_LEVEL ?? 'info',
    destroyOnClose: env.WARREN_DESTROY_ON_CLOSE === '1',
    volumeMaxMb: int(env.WARREN_VOLUME_MAX_MB, 10240),
    volumesPerSandbox: int(env.WARREN_VOLUMES_PER_SANDBOX, 4),
    ...overrides,
  };
  return config;
}
