/**
 * Host agents as their own processes (`warren agent`), for the tests of
 * several hosts: each with its own home and gVisor runtime root, the
 * checkout's templates, and the test's S3 snapshot store. `removeHomes`
 * deletes whatever containers and mounts a failed test left in them.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { S3StoreConfig } from '@warren/host-agent';
import { REPO, RUNSC, TEMPLATES_DIR, unmountBelow } from './fixture';
import { waitFor } from './wait';

const WARREN = join(REPO, 'packages/cli/bin/warren.js');

export interface AgentProcess {
  home: string;
  hostId: string;
  child: ChildProcess;
  /** Its stdout and stderr so far. */
  log: string;
}

/** The containers an agent's runtime holds. */
export function containers(home: string): string[] {
  try {
    return execFileSync(RUNSC, ['--root', join(home, 'runsc'), 'list', '-quiet'], {
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}

/** A self-signed certificate for 127.0.0.1: `{dir}/cert.pem` and `{dir}/key.pem`. */
export function selfSignedCert(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat(
      subject,
      ['-days', '1', '-keyout', key, '-out', cert],
    ),
    { stdio: 'ignore' },
  );
  return { cert, key };
}

/** Starts `warren agent` and waits until it serves (it has joined or heartbeat once). */
export async function startAgentProcess(o: {
  controlPlane: string;
  hostId: string;
  token?: string;
  home?: string;
  tls?: { cert: string; key: string };
  /** `host:port` to listen on, and the URL to advertise (a proxy in front of it). */
  listen?: string;
  advertise?: string;
  s3: S3StoreConfig;
  /** Its own templates directory (default: the checkout's, shared with the control plane). */
  templatesDir?: string;
}): Promise<AgentProcess> {
  const home = o.home ?? mkdtempSync('/tmp/wag-');
  const args = [WARREN, 'agent', '--control-plane', o.controlPlane, '--host-id', o.hostId];
  if (o.token) args.push('--join-token', o.token);
  if (o.tls) args.push('--tls-cert', o.tls.cert, '--tls-key', o.tls.key);
  if (o.listen) args.push('--listen', o.listen);
  if (o.advertise) args.push('--advertise', o.advertise);
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      WARREN_HOME: home,
      WARREN_TEMPLATES_DIR: o.templatesDir ?? TEMPLATES_DIR,
      WARREN_RUNSC: RUNSC,
      WARREN_MEMORY_BUDGET_MB: '4096',
      WARREN_DESTROY_ON_CLOSE: '1',
      WARREN_LOG_LEVEL: 'warn',
      // One snapshot store for every host: a snapshot taken on one restores on another.
      WARREN_SNAPSHOT_STORE: 's3',
      WARREN_S3_BUCKET: o.s3.bucket,
      WARREN_S3_PREFIX: o.s3.prefix,
      WARREN_S3_ENDPOINT: o.s3.endpoint,
      WARREN_S3_ACCESS_KEY_ID: o.s3.accessKeyId,
      WARREN_S3_SECRET_ACCESS_KEY: o.s3.secretAccessKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const agent: AgentProcess = { home, hostId: o.hostId, child, log: '' };
  child.stdout!.on('data', (d: Buffer) => (agent.log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (agent.log += d.toString()));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`agent exited: ${agent.log}`);
      return /^host \S+ at /m.test(agent.log);
    },
    { timeoutMs: 60_000, what: `agent ${o.hostId} up` },
  );
  return agent;
}

/** Stops an agent (thawed first, if frozen) and waits for its exit. */
export async function stopAgent(a: AgentProcess): Promise<void> {
  if (a.child.exitCode !== null || a.child.signalCode !== null) return;
  const exited = new Promise((r) => a.child.once('exit', r));
  a.child.kill('SIGCONT');
  a.child.kill('SIGTERM');
  await exited;
}

/** Removes agent homes, with whatever containers and mounts are left in them. */
export function removeHomes(homes: string[]): void {
  for (const home of homes) {
    for (const id of containers(home))
      try {
        execFileSync(RUNSC, ['--root', join(home, 'runsc'), 'delete', '-force', id]);
      } catch {
        // gone
      }
    unmountBelow(home);
    rmSync(home, { recursive: true, force: true });
  }
}
