/**
 * Test fixture: a real single-node platform (gVisor driver, real runsc) on a
 * loopback port with its own state directory. Templates come from the shared
 * test cache (.state/templates, built by `npm test`'s setup). Teardown destroys
 * every sandbox, checks runsc holds none, and removes the state directory.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { basename, join } from 'node:path';
import { startPlatform, type Platform, type StartOptions } from '@warren/server';
import { readSpec } from '../packages/host-agent/src/sandboxes/state-files';
import { startLocalPostgres, type LocalPostgres } from '../packages/server/src/store/pg-local';

export const REPO = join(import.meta.dirname, '..');
export const TEMPLATES_DIR = join(REPO, '.state/templates');
export const RUNSC = join(REPO, '.state/bin/runsc');

export interface TestPlatform extends Platform {
  home: string;
  api(
    path: string,
    init?: RequestInit & { json?: unknown; token?: string | null },
  ): Promise<Response>;
  json<T = any>(path: string, init?: RequestInit & { json?: unknown }): Promise<T>; // eslint-disable-line @typescript-eslint/no-explicit-any
  runscContainers(): string[];
  stop(): Promise<void>;
}

/**
 * WARREN_TEST_STORE=postgres runs a test file's platforms on the PostgreSQL
 * store: each gets a private cluster (store/pg-local.ts), stopped and removed
 * with the platform. Files that restart a platform on one home pass
 * databaseUrl themselves.
 */
async function testStore(rest: StartOptions): Promise<LocalPostgres | null> {
  if (rest.databaseUrl !== undefined || process.env.WARREN_TEST_STORE !== 'postgres') return null;
  return startLocalPostgres({ unsafeNoFsync: true });
}

export async function startTestPlatform(
  options: StartOptions & { keepHome?: boolean } = {},
): Promise<TestPlatform> {
  const { keepHome, ...rest } = options;
  const home = rest.home ?? mkdtempSync('/tmp/wt-');
  const cluster = await testStore(rest).catch((err: unknown) => {
    if (!keepHome && !rest.home) rmSync(home, { recursive: true, force: true });
    throw err;
  });
  // A platform that fails to start leaves no state directory (or cluster) behind either.
  const platform = await startPlatform({
    home,
    host: '127.0.0.1',
    port: 0,
    templatesDir: TEMPLATES_DIR,
    runsc: RUNSC,
    // WARREN_TEST_LOG_DIR=<dir>: each platform logs (info) to <dir>/<its state directory's name>.log.
    logger: process.env.WARREN_TEST_LOG_DIR
      ? { level: 'info', file: join(process.env.WARREN_TEST_LOG_DIR, `${basename(home)}.log`) }
      : false,
    destroyOnClose: true,
    onProgress: () => undefined,
    // A free port for the database front door: never collide with an install on 5433.
    dbPort: 0,
    ...(cluster && { databaseUrl: cluster.url }),
    ...rest,
  }).catch(async (err: unknown) => {
    await cluster?.stop();
    if (!keepHome && !rest.home) rmSync(home, { recursive: true, force: true });
    throw err;
  });
  unswept.set(home, () => sweepHome(home, keepHome));
  const api: TestPlatform['api'] = (path, init = {}) => {
    const { json, token, ...req } = init;
    const headers = new Headers(req.headers);
    if (token !== null) headers.set('authorization', `Bearer ${token ?? platform.adminToken}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(platform.url + path, {
      ...req,
      headers,
      body: json !== undefined ? JSON.stringify(json) : req.body,
    });
  };
  const runscContainers = () => containersOf(home);
  return {
    ...platform,
    home,
    api,
    async json(path, init) {
      const res = await api(path, init);
      const body = (await res.json()) as never;
      if (!res.ok)
        throw new Error(
          `${init?.method ?? 'GET'} ${path} -> ${res.status} ${JSON.stringify(body)}`,
        );
      return body;
    },
    runscContainers,
    async stop() {
      try {
        await platform.close();
      } finally {
        unswept.delete(home);
        sweepHome(home, keepHome);
        await cluster?.stop();
      }
    },
  };
}

/** The runsc containers of a platform's state directory. */
function containersOf(home: string): string[] {
  return execFileSync(RUNSC, ['--root', join(home, 'runsc'), 'list', '-quiet'], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}

/** Whatever a failed test left behind: no container of this home survives, nor its mounts. */
function sweepHome(home: string, keepHome: boolean | undefined): void {
  let ids: string[] = [];
  try {
    ids = containersOf(home);
  } catch {
    // no runsc state yet
  }
  for (const id of ids) {
    try {
      execFileSync(RUNSC, ['--root', join(home, 'runsc'), 'delete', '-force', id]);
    } catch {
      // already gone
    }
  }
  // Loop mounts of sandbox disks and volumes a failed test left: never delete through them.
  unmountBelow(home);
  if (!keepHome) rmSync(home, { recursive: true, force: true });
}

/**
 * Platforms of this process not stopped yet. The test runner ends a file that
 * runs past its timeout with SIGTERM, and no `after` hook runs then: their
 * sandboxes would go on running (and loading the machine) after the process.
 */
const unswept = new Map<string, () => void>();
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => {
    for (const sweep of unswept.values()) {
      try {
        sweep();
      } catch {
        // sweep the others
      }
    }
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  });

/** Unmounts every mount at or below dir, deepest first (lazily if busy). */
export function unmountBelow(dir: string): void {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const point of points) {
    try {
      execFileSync('umount', [point], { stdio: 'ignore' });
    } catch {
      execFileSync('umount', ['-l', point], { stdio: 'ignore' });
    }
  }
}

/** Creates a sandbox through the REST API and returns its id. */
export async function createSandbox(
  p: TestPlatform,
  body: Record<string, unknown> = { template: 'base' },
): Promise<string> {
  const sbx = await p.json<{ id: string }>('/v1/sandboxes', { method: 'POST', json: body });
  return sbx.id;
}

/** The CPU cgroup file of a sandbox's current runtime container (v1 cfs_quota_us, or v2 cpu.max). */
async function cpuQuotaFile(home: string, id: string): Promise<{ path: string; v2: boolean }> {
  const container = (await readSpec(join(home, 'sandboxes', id))).id;
  const v1 = join('/sys/fs/cgroup/cpu', container, 'cpu.cfs_quota_us');
  return existsSync(v1)
    ? { path: v1, v2: false }
    : { path: join('/sys/fs/cgroup', container, 'cpu.max'), v2: true };
}

/** The CFS quota of a sandbox, per 100 ms period (-1: none). */
export async function cpuQuotaOf(home: string, id: string): Promise<number> {
  const { path, v2 } = await cpuQuotaFile(home, id);
  const quota = readFileSync(path, 'utf8').trim().split(' ')[0];
  return v2 && quota === 'max' ? -1 : Number(quota);
}

/** Takes a sandbox's CFS quota away, as a restore leaves it until the host agent sets it. */
export async function clearCpuQuota(home: string, id: string): Promise<void> {
  const { path, v2 } = await cpuQuotaFile(home, id);
  writeFileSync(path, v2 ? 'max' : '-1');
}

export async function exec(p: TestPlatform, id: string, body: Record<string, unknown>) {
  return p.json<{
    exit_code: number;
    stdout: string;
    stderr: string;
    timed_out: boolean;
    signal: string | null;
    pid: number;
  }>(`/v1/sandboxes/${id}/exec`, { method: 'POST', json: body });
}

/** A python3 program for a background process that counts to /tmp/count 20 times a second. */
export const COUNTER = [
  'import time',
  'i = 0',
  'while True:',
  '    i += 1',
  "    open('/tmp/count.tmp', 'w').write(str(i))",
  "    __import__('os').replace('/tmp/count.tmp', '/tmp/count')",
  '    time.sleep(0.05)',
].join('\n');

/**
 * Runs the `warren` CLI as a child process against the platform (asynchronously:
 * the platform serves from this process). No token file of a platform on this
 * machine may be picked up instead of the one given.
 */
export function runCli(
  p: TestPlatform,
  args: string[],
  cwd = process.cwd(),
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO, 'packages/cli/bin/warren.js'), ...args], {
      cwd,
      env: {
        ...process.env,
        WARREN_API: p.url,
        WARREN_API_KEY: p.adminToken,
        WARREN_HOME: join(cwd, 'no-warren-home'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
