/**
 * Single-node platform: the control plane and one host agent in one process.
 * The control plane reaches the agent only through HostApi, so several hosts
 * later are a change of transport, not a rewrite.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHostAgent, type LocalHostAgent } from '@warren/host-agent';
import { buildApp, type App } from './app';
import { AuditService } from './audit-service';
import { ensureAdminToken } from './auth';
import { KeyService } from './keys/service';
import { instrumentHost } from './metrics/host';
import { Metrics } from './metrics/registry';
import { hostAgentConfig, loadConfig, type Config } from './config';
import type { AppContext } from './context';
import { createDatabases, type DatabaseLog } from './databases';
import { connectRemoteHost } from './hosts/remote-host';
import { HostRouter } from './hosts/router';
import { HostService } from './hosts/service';
import { systemClock } from './sandboxes/clock';
import { MemoryPressure } from './sandboxes/pressure';
import { SandboxCreator } from './sandboxes/create';
import { SandboxGuest } from './sandboxes/guest';
import { SandboxLifecycle } from './sandboxes/lifecycle';
import { NetworkService } from './sandboxes/network';
import { reconcileSandboxes } from './sandboxes/reconcile';
import { SnapshotService } from './sandboxes/snapshots';
import { IdleSweeps } from './sandboxes/sweeps';
import { QuotaService } from './quotas/service';
import { openStore } from './store/open';
import { Sweeper } from './sweeper';
import { Leadership } from './store/leader';
import { moveDatabasesOff } from './databases/move';
import { loadApiTls } from './tls';
import { TemplateService } from './template-service';
import { VolumeService } from './volume-service';
import { UsageSampler } from './usage/sampler';
import { UsageService } from './usage/service';
import { createWebhooks } from './webhooks';

export const VERSION = '0.1.0';

export interface Platform {
  url: string;
  adminToken: string;
  tokenFile: string;
  config: Config;
  app: App;
  context: AppContext;
  /** The in-process host agent (tests and benchmarks look at it directly). */
  host: LocalHostAgent;
  sweeper: Sweeper;
  /** The databases' front door: its port and the CA file for `sslrootcert`. */
  dbPort: number;
  dbCaFile: string;
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
  mkdirSync(config.home, { recursive: true, mode: 0o700 });

  const store = await openStore(config);
  const tokenFile = join(config.home, 'admin-token');
  const adminToken = await ensureAdminToken(store, tokenFile);

  let app: App | null = null;
  const webhooks = createWebhooks(store, config, { warn: (o, m) => app?.log.warn(o, m) });

  let network: NetworkService | null = null;
  let metrics: Metrics | null = null;
  const onEgressEvent: Parameters<typeof createHostAgent>[0]['onEgressEvent'] = (sandboxId, e) => {
    network?.record(sandboxId, e);
    metrics?.egress(e);
  };
  const local = await createHostAgent({ ...hostAgentConfig(config), onEgressEvent });
  try {
    // Every service reaches hosts through the router: the local agent and any that joined.
    const host = new HostRouter(local, store);
    const leadership = new Leadership(store.db, config.leaderRetryMs);
    host.leads = () => leadership.leads();
    host.sharesTemplates = config.snapshotStore.kind === 's3';
    webhooks.dispatcher.leads = host.leads;
    const meters = new Metrics(store, host);
    metrics = meters;
    const sampler = new UsageSampler(
      store,
      host,
      config.usageSampleMs,
      config.usageRetentionSeconds,
    );
    instrumentHost(host, meters, sampler);
    await host.templates.ensure(config.templates, progress);

    const volumes = new VolumeService(store, host, config);
    await volumes.mountAll(progress);
    const sandboxes = new SandboxLifecycle(store, host, config, volumes, systemClock);
    sandboxes.pressure = new MemoryPressure(store, host, config, sandboxes);
    const creator = new SandboxCreator(store, host, config, volumes, sandboxes);
    network = new NetworkService(store, host, sandboxes);
    await reconcileSandboxes(store, local, sandboxes);
    const agentCa = config.agentCaFile ? readFileSync(config.agentCaFile) : undefined;
    const hosts = new HostService(store, host, sandboxes, {
      leaseMs: config.hostLeaseMs,
      version: VERSION,
      sharedSnapshots: config.snapshotStore.kind === 's3',
      connect: (o) => connectRemoteHost({ ...o, onEgressEvent, ca: agentCa }),
      log: { info: (o, m) => app?.log.info(o, m), warn: (o, m) => app?.log.warn(o, m) },
    });
    creator.hosts = hosts;
    await hosts.reconnectAll();

    const log: DatabaseLog = {
      info: (o, m) => app?.log.info(o, m),
      warn: (o, m) => app?.log.warn(o, m),
      error: (o, m) => app?.log.error(o, m),
    };
    const databases = await createDatabases(store, host, config, creator, sandboxes, log);
    databases.service.provisioner.hosts = hosts;
    hosts.moveDatabases = (id) => moveDatabasesOff(databases.service, id, log);
    const quotas = new QuotaService(store, config.quotaDefaults);
    const snapshots = new SnapshotService(store, host, sandboxes, creator);
    for (const service of [creator, volumes, databases.service, snapshots]) service.quotas = quotas;
    quotas.onQuotaExceeded = (e) =>
      webhooks.emitQuietly(
        e.orgId,
        'quota.exceeded',
        { quota: e.quota, limit: e.limit, current: e.current },
        { warn: (o, m) => app?.log.warn(o, m) },
      );
    databases.archiver.lag.onEvent = (db, type, report) =>
      webhooks.emitQuietly(db.org_id, type, report, log);
    webhooks.dispatcher.onFinished = (result, seconds) => meters.webhookDelivery(result, seconds);
    const context: AppContext = {
      config,
      store,
      audit: new AuditService(store),
      keys: new KeyService(store, config.jwt, config.authFailures),
      host,
      hosts,
      sandboxes,
      creator,
      snapshots,
      guest: new SandboxGuest(host, sandboxes),
      network,
      volumes,
      templates: new TemplateService(store, host),
      databases,
      metrics: meters,
      usage: new UsageService(store, sampler),
      quotas,
      webhooks,
      version: VERSION,
      startedAt: Date.now(),
    };
    const tls = await loadApiTls(config);
    app = await buildApp(context, logger ?? { level: config.logLevel }, tls ?? undefined);
    sampler.log = app.log;
    sandboxes.pressure.log = app.log;
    const sweeper = new Sweeper(
      new IdleSweeps(store, host, config, sandboxes),
      store,
      config.sweepIntervalMs,
      config.stoppedRetentionSeconds,
      app.log,
    );
    const address = await app.listen({ host: config.host, port: config.port });
    const port = new URL(address).port;
    const dbPort = await databases.start();
    const scheme = tls ? 'https' : 'http';
    config.previewUrl ??= `${scheme}://{port}-{id}.${config.previewDomain}:${port}`;
    const shownHost = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
    sweeper.leads = host.leads;
    leadership.log = app.log;
    leadership.start();
    sweeper.start();
    sampler.start();
    hosts.start();
    webhooks.dispatcher.start();

    let closed = false;
    return {
      url: `${scheme}://${shownHost}:${port}`,
      adminToken,
      tokenFile,
      config,
      app,
      context,
      host: local,
      sweeper,
      dbPort,
      dbCaFile: databases.tls.caFile,
      async close() {
        if (closed) return;
        closed = true;
        await sweeper.stop();
        hosts.stop();
        // Deliveries cut short stay pending in the store: the next start sends them.
        await webhooks.dispatcher.stop();
        await databases.stop();
        await leadership.stop();
        await app!.close();
        if (config.destroyOnClose) {
          const running = await store.sandboxesOnHost(local.id, [
            'creating',
            'running',
            'stopping',
          ]);
          for (const row of running)
            await sandboxes
              .destroy(row.org_id, row.id, 'platform shut down')
              .catch(() => undefined);
        }
        await sampler.stop();
        // Joined agents keep their sandboxes: only the connections to them close.
        await host.close({ destroy: config.destroyOnClose });
        await store.close();
      },
    };
  } catch (err) {
    // A start that fails leaves nothing mounted or listening: the host agent
    // holds mounts (the volume pool, disks made ahead of time).
    await app?.close().catch(() => undefined);
    await local.close({ destroy: config.destroyOnClose }).catch(() => undefined);
    await store.close().catch(() => undefined);
    throw err;
  }
}
