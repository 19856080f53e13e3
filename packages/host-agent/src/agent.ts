/**
 * createHostAgent: one host's agent behind the HostApi contract. It wires the
 * runtime driver, the egress proxy, the snapshot store, templates and volumes,
 * and hands each part of the API to the module named for it.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GUEST_PATHS, type HostApi } from '@warren/protocol';
import { defaultRunsc, type HostAgentConfig } from './config';
import type { HostContext } from './context';
import { guestFiles } from './guest/files';
import { guestProcesses } from './guest/processes';
import { guestCode } from './guest/code';
import { guestPty } from './guest/pty';
import { AddressGuard, parseCidrList } from './network/addresses';
import { EgressCa } from './network/ca';
import { EgressProxy } from './network/egress-proxy';
import { BUILTIN_PRESETS } from './network/presets';
import { Resolver } from './network/resolver';
import { createDriver } from './runtime';
import type { RuntimeDriver } from './runtime/driver';
import { Captures } from './sandboxes/capture';
import { checkSandboxNetwork, setSandboxNetwork } from './sandboxes/connect';
import { CpuWeights } from './sandboxes/cpu-weights';
import { createSandbox } from './sandboxes/create';
import {
  cpuUsageNs,
  oomKilled,
  destroySandbox,
  hibernateSandbox,
  pauseSandbox,
  resumeSandbox,
  wakeSandbox,
} from './sandboxes/lifecycle';
import { reconcile } from './sandboxes/reconcile';
import { SandboxRegistry } from './sandboxes/registry';
import { memoryUsedMb, reclaimSandbox, sandboxUsage } from './sandboxes/usage';
import { createObjectStore, hostArchiveApi } from './archive';
import { checkKey } from './archive/store';
import { volumeReader } from './archive/volume-read';
import { createSnapshotStore, type SnapshotStore } from './snapshots';
import { DiskPool } from './storage/disk-pool';
import { HostVolumes, plainName, templateSeed } from './storage/host-volumes';
import { bake, bakeBuildSandbox } from './templates/bake';
import { DEFAULT_DISK_MB, TemplateCatalog, type TemplateRecord } from './templates/catalog';
import { ensureGuestBundle, type GuestBundle } from './templates/guest-bundle';
import { hostTemplateApi } from './templates/template-api';

/**
 * The in-process agent: HostApi, plus what the process that embeds it (the
 * single-node platform, its tests and benchmarks) may look at directly.
 */
export interface LocalHostAgent extends HostApi {
  /** Waits until the runtime's background teardowns have finished. */
  settle(): Promise<void>;
  /** Whether a sandbox is live on this host. */
  isLive(id: string): boolean;
  readonly driver: RuntimeDriver;
  readonly snapshotStore: SnapshotStore;
  /** A template's record with its host paths (benchmarks restore it with runsc directly). */
  templateRecord(name: string): Promise<TemplateRecord>;
  /** The guest agent's own health answer (open file watches among it). */
  guestHealth(id: string): Promise<{ connections: number; watches: number }>;
}

async function egressProxy(config: HostAgentConfig): Promise<EgressProxy> {
  const e = config.egress;
  const extra = e.presetsFile
    ? (JSON.parse(await readFile(e.presetsFile, 'utf8')) as Record<string, string[]>)
    : {};
  const proxy = new EgressProxy({
    ca: await EgressCa.open(join(config.home, 'egress-ca'), e.caFiles),
    resolver: new Resolver(e.hostsFile ?? undefined),
    guard: new AddressGuard({ block: parseCidrList(e.block), unblock: parseCidrList(e.unblock) }),
    presets: { ...BUILTIN_PRESETS, ...extra },
    onEvent: (sandboxId, event) => config.onEgressEvent?.(sandboxId, event),
  });
  proxy.compile(e.defaultPolicy);
  return proxy;
}

export async function createHostAgent(config: HostAgentConfig): Promise<LocalHostAgent> {
  const sandboxesDir = join(config.home, 'sandboxes');
  const scratchDir = join(config.home, 'snapshots', '.scratch');
  for (const dir of [sandboxesDir, join(config.home, 'runsc'), config.templatesDir, scratchDir])
    await mkdir(dir, { recursive: true, mode: 0o700 });
  const driver = createDriver(config.driver, {
    runsc: config.runsc ?? defaultRunsc(),
    stateDir: join(config.home, 'runsc'),
  });
  const runtime = await driver.version();
  let guest: GuestBundle | null = null;
  const ctx: HostContext = {
    hostId: config.hostId,
    sandboxesDir,
    scratchDir,
    readyTimeoutMs: config.readyTimeoutMs,
    driver,
    runtimeVersion: `${driver.name} ${runtime}`,
    registry: new SandboxRegistry(config.hostId, {
      budgetMb: config.memoryBudgetMb,
      overcommit: config.memoryOvercommit ?? 8,
      startMb: config.memoryStartMb ?? 64,
    }),
    catalog: new TemplateCatalog(config.templatesDir, config.debianMirror),
    volumes: new HostVolumes(join(config.home, 'volumes')),
    diskPool: null,
    snapshots: createSnapshotStore(
      join(config.home, 'snapshots', 'store'),
      config.snapshotStore.kind === 's3' ? config.snapshotStore : undefined,
    ),
    egress: await egressProxy(config),
    guestBundle: async () =>
      (guest ??= await ensureGuestBundle(join(config.templatesDir, '.guest'))),
  };
  await ctx.volumes.open();
  if (driver.capabilities.diskLimit) {
    ctx.diskPool = new DiskPool(join(config.home, 'disk-pool'), () => ctx.registry.busyStarting);
    await ctx.diskPool.open([DEFAULT_DISK_MB]);
  }
  const captures = new Captures(ctx);
  const weights = new CpuWeights(ctx, {
    idleSeconds: config.idleCpuWeightSeconds ?? 30,
    idleCpuPercent: config.idleCpuPercent ?? 15,
  });
  weights.start();
  /** Every request for a sandbox's guest goes through here: it is in use. */
  const channelOf = (id: string) => {
    const channel = ctx.registry.live(id).channel;
    weights.used(id);
    return channel;
  };
  /** A checkpoint or a resume is the runtime's work for the sandbox: at its normal weight too. */
  const inUse = (id: string) => {
    if (ctx.registry.has(id)) weights.used(id);
    return id;
  };
  const files = guestFiles(channelOf);
  const objects = createObjectStore(
    config.home,
    config.snapshotStore.kind === 's3' ? config.snapshotStore : undefined,
  );
  /** An archived tar to unpack onto a new volume: its key and name checked first. */
  const archivedTar = ({ key, to }: { key: string; to: string }) => {
    checkKey(key);
    return { body: () => objects.get(key), to: plainName(to) };
  };
  const create = (req: Parameters<typeof createSandbox>[2]) => createSandbox(ctx, captures, req);

  return {
    id: config.hostId,
    driver,
    snapshotStore: ctx.snapshots,
    async info() {
      const c = driver.capabilities;
      return {
        id: config.hostId,
        driver: driver.name,
        runtime_version: runtime,
        capabilities: {
          checkpoint: c.checkpoint,
          pause: c.pause,
          disk_limit: c.diskLimit,
          egress: c.egress,
          volume_clone: ctx.volumes.cloneMode,
        },
      };
    },
    async capacity() {
      const used = await memoryUsedMb(ctx);
      return { ...ctx.registry.capacity(), ...(used !== undefined && { memory_used_mb: used }) };
    },
    sandboxes: {
      create,
      destroy: (id) => destroySandbox(ctx, id),
      pause: (id) => pauseSandbox(ctx, id),
      resume: (id) => resumeSandbox(ctx, inUse(id)),
      hibernate: (id, o) => hibernateSandbox(ctx, inUse(id), o),
      wake: (id, o) => wakeSandbox(ctx, id, o),
      capture: (id) => captures.capture(inUse(id)),
      releaseCapture: (captureId) => captures.release(captureId),
      snapshot: (id, snapshotId) => captures.snapshot(inUse(id), snapshotId),
      cpuUsageNs: (id) => cpuUsageNs(ctx, id),
      oomKilled: (id) => oomKilled(ctx, id),
      usage: (id) => sandboxUsage(ctx, id),
      reclaim: (id) => reclaimSandbox(ctx, id),
      async live() {
        const listed = new Set(await driver.list());
        return ctx.registry.ids().filter((id) => listed.has(ctx.registry.live(id).containerId));
      },
      checkNetwork: async (network) => checkSandboxNetwork(ctx, network),
      setNetwork: async (id, network) => setSandboxNetwork(ctx, id, network),
      openPort: (id, port, options) => channelOf(id).openPort(port, options),
      reconcile: (expected, hibernated) => reconcile(ctx, expected, hibernated),
    },
    processes: guestProcesses(channelOf),
    pty: guestPty(channelOf),
    code: guestCode(channelOf),
    files,
    templates: hostTemplateApi(ctx, {
      catalog: ctx.catalog,
      bake: (...args) => bake(ctx, ...args),
      bakeBuildSandbox: (...args) => bakeBuildSandbox(ctx, ...args),
      startSandbox: async (req) => {
        await create(req);
        return channelOf(req.id);
      },
      dropSandbox: (id) => ctx.registry.teardown(`build:${id}`, () => destroySandbox(ctx, id)),
    }),
    volumes: {
      create: async (id, sizeMb, o = {}) =>
        ctx.volumes.create(id, sizeMb, {
          journal: o.journal,
          seed: o.seed && (await templateSeed(ctx.catalog, o.seed)),
          unpack: o.unpack && archivedTar(o.unpack),
          fetch: o.fetch && {
            to: plainName(o.fetch.to),
            files: o.fetch.keys.map((key) => {
              checkKey(key);
              return { name: key.slice(key.lastIndexOf('/') + 1), body: () => objects.get(key) };
            }),
          },
        }),
      clone: (from, to, o) => ctx.volumes.clone(from, to, o),
      remove: (id) => ctx.volumes.remove(id),
      usedBytes: (id) => ctx.volumes.usedBytes(id),
      mount: (id) => ctx.volumes.ensureMounted(id),
    },
    snapshots: { delete: (snapshotId) => ctx.snapshots.delete(snapshotId) },
    archive: hostArchiveApi(objects, files, volumeReader(ctx)),
    settle: () => ctx.registry.settle(),
    isLive: (id) => ctx.registry.has(id),
    templateRecord: (name) => ctx.catalog.get(name),
    guestHealth: (id) => channelOf(id).json({ path: GUEST_PATHS.health }),
    async close(o = {}) {
      await weights.stop();
      for (const id of ctx.registry.ids()) {
        if (o.destroy) await destroySandbox(ctx, id);
        else await ctx.registry.live(id).channel.close();
      }
      await captures.releaseAll();
      // A bake cannot outlive this process (its channel listens here): stop it.
      await ctx.registry.stopBakes();
      await ctx.registry.settle();
      await ctx.diskPool?.close();
      // Volume data stays on disk; the next start mounts it again.
      if (o.destroy) await ctx.volumes.unmountAll();
    },
  };
}
