/**
 * `warren cluster up --agents N`: several hosts on one machine, to develop,
 * test and try them. A private PostgreSQL (store/pg-local.ts: Debian's
 * server binaries, a cluster of its own, removed at stop) holds the state,
 * and s3rver (an S3-protocol server on loopback) is the snapshot store every
 * host shares, so snapshots restore on any host and lost hosts' work moves;
 * the control plane runs in this process (with its own in-process agent, the
 * host `host_local`); N agents run as separate `warren agent` processes,
 * each with its own home under `$WARREN_HOME/agents/` and the control
 * plane's built templates. The cluster's state lasts as long as it runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPlatform, type Platform } from '../platform';
import { loadConfig } from '../config';
import { startLocalPostgres, type LocalPostgres } from '../store/pg-local';
import { startLocalS3 } from './local-s3';

const WARREN_BIN = resolve(fileURLToPath(new URL('../../../cli/bin/warren.js', import.meta.url)));

export interface Cluster {
  platform: Platform;
  postgres: LocalPostgres;
  agents: ChildProcess[];
  /** Host ids of the agents, in start order. */
  hostIds: string[];
  close(): Promise<void>;
}

function waitLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`agent did not start: ${out}`)), timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolvePromise(m[1]!);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`agent exited with ${code}: ${out}`));
    });
  });
}

export async function startCluster(o: {
  agents: number;
  onProgress?: (line: string) => void;
}): Promise<Cluster> {
  const progress = o.onProgress ?? ((line: string) => console.log(`[warren cluster] ${line}`));
  const base = loadConfig(process.env);
  mkdirSync(base.home, { recursive: true, mode: 0o700 });
  const postgres = await startLocalPostgres({ database: 'warren' });
  progress(`PostgreSQL store at ${postgres.dir}`);
  const s3 = await startLocalS3(join(base.home, 's3')).catch(async (err: unknown) => {
    await postgres.stop();
    throw err;
  });
  progress(`S3 snapshot store at ${s3.config.endpoint}`);
  const agents: ChildProcess[] = [];
  let platform: Platform | null = null;
  const close = async () => {
    for (const a of agents) if (a.exitCode === null) a.kill('SIGTERM');
    await Promise.all(
      agents.map((a) => (a.exitCode === null ? new Promise((r) => a.once('exit', r)) : null)),
    );
    await platform?.close();
    await s3.stop();
    await postgres.stop();
  };
  try {
    platform = await startPlatform({
      home: join(base.home, 'control'),
      templatesDir: base.templatesDir,
      databaseUrl: postgres.url,
      snapshotStore: { kind: 's3', ...s3.config },
      // The cluster's records go with it: so do its sandboxes.
      destroyOnClose: true,
      onProgress: progress,
    });
    const hostIds: string[] = [];
    for (let i = 1; i <= o.agents; i++) {
      const home = join(base.home, 'agents', `agent-${i}`);
      // A new store knows no agent: each joins afresh.
      rmSync(join(home, 'agent.json'), { force: true });
      const token = await platform.context.hosts.createJoinToken(600);
      const child = spawn(
        process.execPath,
        [
          WARREN_BIN,
          'agent',
          '--control-plane',
          platform.url,
          '--join-token',
          token.token,
          '--host-id',
          `host_agent${i}`,
        ],
        {
          env: {
            ...process.env,
            WARREN_HOME: home,
            WARREN_TEMPLATES_DIR: base.templatesDir,
            WARREN_DESTROY_ON_CLOSE: '1',
            WARREN_SNAPSHOT_STORE: 's3',
            WARREN_S3_BUCKET: s3.config.bucket,
            WARREN_S3_PREFIX: s3.config.prefix,
            WARREN_S3_ENDPOINT: s3.config.endpoint,
            WARREN_S3_ACCESS_KEY_ID: s3.config.accessKeyId,
            WARREN_S3_SECRET_ACCESS_KEY: s3.config.secretAccessKey,
          },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      agents.push(child);
      hostIds.push(await waitLine(child, /^host (\S+) at /m, 120_000));
      progress(`agent ${hostIds[i - 1]} joined (home ${home})`);
    }
    return { platform, postgres, agents, hostIds, close };
  } catch (err) {
    await close();
    throw err;
  }
}
