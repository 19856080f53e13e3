/**
 * Single-node platform: the control plane and one host agent in one process.
 * The same pieces run apart for many hosts later (PostgreSQL store, remote
 * host agents); here they are wired directly.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AddressGuard,
  BUILTIN_PRESETS,
  EgressCa,
  EgressProxy,
  HostAgent,
  Resolver,
  createDriver,
  createSnapshotStore,
  parseCidrList,
} from '@warren/host-agent';
import { buildApp, type App } from './app';
import { ensureAdminToken } from './auth';
import { loadConfig, type Config } from './config';
import type { AppContext } from './context';
import { SandboxService } from './sandbox-service';
import { VolumeService } from './volume-service';
import { openSqliteStore } from './store/open';
import { Sweeper } from './sweeper';

export const VERSION = '0.1.0';

export interface Platform {
  url: string;
  adminToken: string;
  tokenFile: string;
  config: Config;
  app: App;
  context: AppContext;
  sweeper: Sweeper;
  close(): Promise<void>;
}

export interface StartOptions extends Partial<Config> {
  /** Progress lines of long steps (template builds); defaults to stdout. */
  onProgress?: (line: string) => void;
  /** Fastify logger option; false silences request logs (tests). */
  logger?: boolean | object;
}

/** Socket paths are limited to 108 bytes; sandbox channels live under the home directory. */
function checkHome(home: string): void {
  if (join(home, 'sandboxes', 'sbx_0123456789abcdef', 'chan', 'agent.sock').length > 100) {
    throw new Error(`WARREN_HOME path is too long for Unix sockets: ${home}`);
  }
}

export async function startPlatform(options: StartOptions = {}): Promise<Platform> {
  const { onProgress, logger, ...overrides } = options;
  const config = loadConfig(process.env, overrides);
  const progress = onProgress ?? ((line: string) => console.log(`[warren] ${line}`));
  checkHome(config.home);
  for (const dir of [
    config.home,
    join(config.home, 'sandboxes'),
    join(config.home, 'runsc'),
    config.templatesDir,
  ]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  const store = await openSqliteStore(join(config.home, 'warren.db'));
  const tokenFile = join(config.home, 'admin-token');
  const adminToken = await ensureAdminToken(store, tokenFile);

  const driver = createDriver(config.driver, {
    runsc: config.runsc,
    stateDir: join(config.home, 'runsc'),
  });
  const runtimeVersion = await driver.version();
  const egress = new EgressProxy({
    ca: await EgressCa.open(join(config.home, 'egress-ca'), config.egressCaFiles),
    resolver: new Resolver(config.egressHostsFile ?? undefined),
    guard: new AddressGuard({
      block: parseCidrList(config.egressBlock),
      unblock: parseCidrList(config.egressUnblock),
    }),
    presets: {
      ...BUILTIN_PRESETS,
      ...(config.networkPresetsFile
        ? (JSON.parse(readFileSync(config.networkPresetsFile, 'utf8')) as Record<string, string[]>)
        : {}),
    },
    onEvent: (sandboxId, e) =>
      void store.insertEgressEvent({ sandbox_id: sandboxId, ...e }).catch(() => undefined),
  });
  // A bad server default is a start-up error, not a failure of every create.
  egress.compile(config.networkDefault);
  const host = new HostAgent(
    {
      hostId: config.hostId,
      sandboxesDir: join(config.home, 'sandboxes'),
      templatesDir: config.templatesDir,
      memoryBudgetMb: config.memoryBudgetMb,
      snapshotStore: createSnapshotStore(
        join(config.home, 'snapshots', 'store'),
        config.snapshotStore.kind === 's3' ? config.snapshotStore : undefined,
      ),
      debianMirror: config.debianMirror,
      readyTimeoutMs: config.readyTimeoutMs,
      egress,
      volumesDir: join(config.home, 'volumes'),
    },
    driver,
  );
  for (const name of await host.templates.removeInterrupted())
    progress(`removed template ${name}: its build was interrupted`);
  for (const name of config.templates) await host.ensureTemplate(name, progress);

  mkdirSync(host.volumes.root, { recursive: true, mode: 0o700 });
  const volumes = new VolumeService(store, host, config);
  await volumes.mountAll(progress);
  const sandboxes = new SandboxService(store, host, config, volumes);
  await sandboxes.reconcile();

  const context: AppContext = {
    config,
    store,
    host,
    sandboxes,
    volumes,
    runtimeVersion,
    version: VERSION,
    startedAt: Date.now(),
  };
  const app = await buildApp(context, logger ?? { level: config.logLevel });
  const sweeper = new Sweeper(
    sandboxes,
    store,
    config.sweepIntervalMs,
    config.stoppedRetentionSeconds,
    app.log,
  );
  const address = await app.listen({ host: config.host, port: config.port });
  const port = new URL(address).port;
  config.previewUrl ??= `http://{port}-{id}.${config.previewDomain}:${port}`;
  const shownHost = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
  sweeper.start();

  let closed = false;
  return {
    url: `http://${shownHost}:${port}`,
    adminToken,
    tokenFile,
    config,
    app,
    context,
    sweeper,
    async close() {
      if (closed) return;
      closed = true;
      await sweeper.stop();
      await app.close();
      if (config.destroyOnClose) {
        const running = await store.sandboxesOnHost(host.id, ['creating', 'running', 'stopping']);
        for (const row of running)
          await sandboxes.destroy(row.org_id, row.id, 'platform shut down').catch(() => undefined);
      }
      await host.close({ destroy: config.destroyOnClose });
      // Volume data stays on disk; the next start mounts it again.
      if (config.destroyOnClose) await host.volumes.unmountAll();
      await store.close();
    },
  };
}
