/**
 * The host agent: owns the sandboxes of one host. It admits them against a
 * memory budget, restores them from template snapshots through a runtime
 * driver, and holds each one's agent channel. The control plane talks to it
 * only through this class's public methods, so running it in another process
 * later is a transport change, not a rewrite.
 */
import { randomBytes } from 'node:crypto';
import { DATA_TOKEN_BYTES } from '@warren/protocol/guest';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  WarrenError,
  GUEST_PATHS,
  type EgressSecret,
  type GuestEgress,
  type GuestHello,
  type GuestVolume,
  type NetworkPolicy,
} from '@warren/protocol';
import { GuestChannel } from './channel';
import type { EgressProxy } from './network/egress-proxy';
import { checkNetwork } from './network/policy';
import { BUILTIN_PRESETS } from './network/presets';
import type { RuntimeDriver, SandboxSpec } from './runtime/driver';
import { ensureGuestBundle, type GuestBundle } from './templates/guest-bundle';
import { BUILTIN_TEMPLATES, TemplateCatalog, type TemplateRecord } from './templates/catalog';
import type { Progress } from './templates/rootfs';
import type { SnapshotStore } from './snapshots';
import { HostVolumes } from './storage/host-volumes';
import {
  prepareSandboxDisk,
  releaseSandboxDisk,
  type HostVolume,
  type SandboxDisk,
} from './storage/sandbox-disk';
import { startAndWaitReady, type BakeOptions } from './templates/start';
import { TemplateBuilder } from './templates/builder';

export interface HostAgentConfig {
  hostId: string;
  /** Per-sandbox state (channel sockets, bundles, logs). */
  sandboxesDir: string;
  templatesDir: string;
  memoryBudgetMb: number;
  debianMirror: string;
  /** How long a restored guest agent may take to dial in. */
  readyTimeoutMs: number;
  /** Snapshot images: a local directory, or an S3 bucket with that directory as cache. */
  snapshotStore: SnapshotStore;
  /** The host-side egress proxy; without it sandboxes reach nothing outside. */
  egress?: EgressProxy;
  /** Volume images and their mounts; default: `volumes` beside the sandboxes directory. */
  volumesDir?: string;
}

/** A sandbox's egress policy and the secrets its requests get on the way out. */
export interface SandboxNetwork {
  policy: NetworkPolicy;
  secrets: EgressSecret[];
}

export interface CreateOnHost {
  id: string;
  template: string;
  /** Restore this captured image (a snapshot) instead of the template's snapshot. */
  from?: { imageDir: string; spec: SandboxSpec };
  cpu: number;
  memoryMb: number;
  /** Size limit of the sandbox's written files (when the driver has diskLimit). */
  diskMb?: number;
  volumes?: HostVolume[];
  env: Record<string, string>;
  network?: SandboxNetwork;
}

interface HostSandbox {
  id: string;
  memoryMb: number;
  channel: GuestChannel;
  workDir: string;
  paused: boolean;
}

/** What a sandbox was started with: kept beside it, so a wake restores the same mounts. */
const SPEC_FILE = 'spec.json';
/** The checkpoint image of a hibernated sandbox, inside its work directory. */
const HIBERNATION_IMAGE = 'hibernated';
/** Disk size and volumes of a sandbox, kept beside it so a wake makes the same disk. */
const STORAGE_FILE = 'storage.json';

interface SandboxStorage {
  diskMb: number | null;
  volumes: HostVolume[];
}

function guestVolumes(volumes: HostVolume[]): GuestVolume[] {
  return volumes.map((v) => ({ name: v.name, mount_path: v.mountPath, read_only: v.readOnly }));
}

/** A cleanup stack: what a step created is undone, in reverse order, when a later step fails. */
class Undo {
  private readonly steps: Array<() => Promise<unknown>> = [];
  push(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }
  async run(): Promise<void> {
    for (const step of this.steps.reverse()) await step().catch(() => undefined);
  }
}

export class HostAgent {
  readonly templates: TemplateCatalog;
  readonly volumes: HostVolumes;
  /** Templates built from images and recipes. */
  readonly builder: TemplateBuilder = new TemplateBuilder(this);
  private readonly sandboxes = new Map<string, HostSandbox>();
  /** Memory reserved by sandboxes being created or running, in MiB. */
  private reservedMb = 0;
  private guest: GuestBundle | null = null;

  constructor(
    readonly config: HostAgentConfig,
    readonly driver: RuntimeDriver,
  ) {
    this.templates = new TemplateCatalog(config.templatesDir, config.debianMirror);
    this.volumes = new HostVolumes(
      config.volumesDir ?? join(dirname(config.sandboxesDir), 'volumes'),
    );
  }

  /**
   * The disk of a sandbox about to be restored: only for drivers that can
   * limit it, and only when the image was taken with a file-backed overlay
   * (a snapshot from before disk limits keeps its in-memory overlay).
   */
  private async prepareDisk(
    workDir: string,
    storage: SandboxStorage,
    imageHasDisk: boolean,
  ): Promise<Partial<SandboxDisk>> {
    if (!this.driver.capabilities.diskLimit || !imageHasDisk) return {};
    for (const v of storage.volumes) await this.volumes.ensureMounted(v.id);
    return prepareSandboxDisk(workDir, storage.diskMb, storage.volumes, (id) =>
      this.volumes.data(id),
    );
  }

  get id(): string {
    return this.config.hostId;
  }

  get snapshots(): SnapshotStore {
    return this.config.snapshotStore;
  }

  capacity(): { memory_budget_mb: number; memory_reserved_mb: number; sandboxes: number } {
    return {
      memory_budget_mb: this.config.memoryBudgetMb,
      memory_reserved_mb: this.reservedMb,
      sandboxes: this.sandboxes.size,
    };
  }

  async guestBundle(): Promise<GuestBundle> {
    this.guest ??= await ensureGuestBundle(join(this.config.templatesDir, '.guest'));
    return this.guest;
  }

  /**
   * Makes sure a built-in template has its root filesystem and a snapshot baked
   * with the current guest agent and runtime; builds what is missing.
   */
  async ensureTemplate(
    name: string,
    progress: Progress,
    opts: { force?: boolean } = {},
  ): Promise<TemplateRecord> {
    const recipe = BUILTIN_TEMPLATES[name];
    if (!recipe) throw new WarrenError('TEMPLATE_NOT_FOUND', `no built-in template ${name}`);
    const guest = await this.guestBundle();
    const runtimeVersion = `${this.driver.name} ${await this.driver.version()}`;
    const existing = await this.templates.read(name);
    if (
      !opts.force &&
      existing?.state === 'ready' &&
      existing.guest_key === guest.key &&
      existing.runtime_version === runtimeVersion
    ) {
      return existing;
    }
    const rootfs = await this.templates.ensureRootfs(recipe, progress);
    progress(`baking snapshot of template ${name}`);
    const started = Date.now();
    const image = await this.bake(
      rootfs,
      guest,
      recipe.maxCpu,
      recipe.maxMemoryMb,
      join(this.templates.dir(name), 'snapshot.tmp'),
      { env: recipe.env, cwd: recipe.workdir, start: recipe.start, ready: recipe.ready, progress },
    );
    const rec = await this.templates.commit(
      { ...recipe, buildMs: Date.now() - started },
      image,
      guest.key,
      runtimeVersion,
    );
    progress(`template ${name} ready (snapshot baked in ${Date.now() - started} ms)`);
    return rec;
  }

  /**
   * Builds a template again: a built-in one is baked again (its root is
   * built first if it is missing, so this is also how an official template
   * not in WARREN_TEMPLATES gets built); a user template repeats its build.
   */
  async rebuildTemplate(name: string, progress: Progress): Promise<TemplateRecord> {
    const rec = await this.templates.read(name);
    if (rec && rec.source !== undefined && rec.source !== 'builtin')
      return this.builder.rebuild(rec, progress);
    if (!BUILTIN_TEMPLATES[name])
      throw new WarrenError(
        'TEMPLATE_NOT_FOUND',
        `template ${JSON.stringify(name)} does not exist`,
      );
    return this.ensureTemplate(name, progress, { force: true });
  }

  /**
   * Boots a sandbox from a root filesystem, waits for its agent, warms it up,
   * starts the template's start command and waits for its readiness check,
   * then checkpoints it.
   */
  async bake(
    rootfs: string,
    guest: GuestBundle,
    cpu: number,
    memoryMb: number,
    imageDir: string,
    opts: BakeOptions = {},
  ): Promise<string> {
    const id = `bake-${randomBytes(6).toString('hex')}`;
    const workDir = join(this.config.sandboxesDir, id);
    const channelDir = join(workDir, 'chan');
    await mkdir(channelDir, { recursive: true });
    const channel = new GuestChannel(join(channelDir, 'agent.sock'), () => ({
      sandbox_id: id,
      env: {},
      defaults: {
        env: opts.env ?? {},
        ...(opts.cwd ? { cwd: opts.cwd } : {}),
        ...(opts.user ? { user: opts.user } : {}),
      },
    }));
    const spec: SandboxSpec = {
      id,
      rootfs,
      guestDir: guest.dir,
      channelDir,
      workDir,
      cpu,
      memoryMb,
      hostname: 'warren',
      env: {},
      // The snapshot gets the file-backed overlay and the volumes mount every create needs.
      ...(await this.prepareDisk(workDir, { diskMb: null, volumes: [] }, true)),
    };
    try {
      await channel.listen();
      await this.driver.boot(spec);
      await channel.waitReady(60_000);
      // Warm the paths every create uses first, so restored copies start warm.
      for (let i = 0; i < 3; i++) {
        await channel.json({
          method: 'POST',
          path: GUEST_PATHS.processes,
          json: { cmd: 'true', args: [], background: true },
        });
        await channel.json({ method: 'GET', path: GUEST_PATHS.filesStat, query: { path: '/' } });
      }
      await startAndWaitReady(channel, opts);
      await channel.prepareCheckpoint();
      await rm(imageDir, { recursive: true, force: true });
      await this.driver.checkpoint(id, imageDir);
      return imageDir;
    } finally {
      await channel.close();
      await this.driver.destroy(id);
      await rm(workDir, { recursive: true, force: true });
    }
  }

  /**
   * Restores a new sandbox from its template's snapshot. Refused at once when
   * it does not fit the memory budget; on any failure nothing is left behind.
   */
  async createSandbox(req: CreateOnHost): Promise<void> {
    // A snapshot restores with the root and guest agent it was captured with.
    const source = req.from
      ? {
          image: req.from.imageDir,
          rootfs: req.from.spec.rootfs,
          guestDir: req.from.spec.guestDir,
          hasDisk: req.from.spec.filestoreDir !== undefined,
        }
      : await this.templates.get(req.template).then(async (t) => ({
          image: t.snapshot,
          rootfs: t.rootfs,
          guestDir: (await this.guestBundle()).dir,
          hasDisk: true,
        }));
    const storage: SandboxStorage = { diskMb: req.diskMb ?? null, volumes: req.volumes ?? [] };
    if (this.sandboxes.has(req.id))
      throw new WarrenError('INTERNAL', `sandbox ${req.id} already exists on this host`);
    this.reserve(req.id, req.memoryMb);
    const undo = new Undo();
    undo.push(async () => (this.reservedMb -= req.memoryMb));
    try {
      const workDir = join(this.config.sandboxesDir, req.id);
      const channelDir = join(workDir, 'chan');
      await mkdir(channelDir, { recursive: true });
      undo.push(() => rm(workDir, { recursive: true, force: true }));
      const channel = new GuestChannel(join(channelDir, 'agent.sock'), (): GuestHello => ({
        sandbox_id: req.id,
        env: req.env,
        egress,
      }));
      // The hello is sent only once the guest dials in, after this line.
      const egress = this.attachEgress(req.id, channel, req.network);
      undo.push(async () => this.config.egress?.detach(req.id));
      await channel.listen();
      undo.push(() => channel.close());
      if (storage.volumes.length > 0 && !source.hasDisk)
        throw new WarrenError(
          'SANDBOX_HAS_VOLUMES',
          'this snapshot was taken before volumes existed and cannot have any attached',
        );
      if (storage.volumes.length > 0 && !this.driver.capabilities.diskLimit)
        throw new WarrenError(
          'INVALID_REQUEST',
          `the ${this.driver.name} runtime cannot attach volumes`,
        );
      // Unmounted before the work directory is removed: never delete through a volume mount.
      undo.push(() => releaseSandboxDisk(workDir));
      const disk = await this.prepareDisk(workDir, storage, source.hasDisk);
      const spec: SandboxSpec = {
        id: req.id,
        rootfs: source.rootfs,
        guestDir: source.guestDir,
        channelDir,
        workDir,
        cpu: req.cpu,
        memoryMb: req.memoryMb,
        hostname: req.id.replace(/_/g, '-'),
        env: {},
        ...disk,
      };
      await writeFile(join(workDir, SPEC_FILE), JSON.stringify(spec));
      await writeFile(join(workDir, STORAGE_FILE), JSON.stringify(storage));
      undo.push(() => this.driver.destroy(req.id));
      await this.driver.restore(spec, source.image);
      await channel.waitReady(this.config.readyTimeoutMs);
      if (storage.volumes.length > 0) {
        await channel.json({
          method: 'POST',
          path: GUEST_PATHS.volumes,
          json: { volumes: guestVolumes(storage.volumes) },
        });
      }
      this.sandboxes.set(req.id, {
        id: req.id,
        memoryMb: req.memoryMb,
        channel,
        workDir,
        paused: false,
      });
    } catch (err) {
      await undo.run();
      throw err;
    }
  }

  private live(id: string): HostSandbox {
    const sbx = this.sandboxes.get(id);
    if (!sbx)
      throw new WarrenError(
        'SANDBOX_NOT_RUNNING',
        `sandbox ${id} is not running on host ${this.id}`,
      );
    return sbx;
  }

  private reserve(id: string, memoryMb: number): void {
    const free = this.config.memoryBudgetMb - this.reservedMb;
    if (memoryMb > free) {
      throw new WarrenError(
        'INSUFFICIENT_CAPACITY',
        `not enough memory on host ${this.id} for ${id}: ${memoryMb} MiB requested, ${free} MiB of ${this.config.memoryBudgetMb} MiB free`,
        { requested_mb: memoryMb, free_mb: free },
      );
    }
    this.reservedMb += memoryMb;
  }

  /** Freezes the sandbox's CPU; memory stays. Its agent cannot answer until resume. */
  async pause(id: string): Promise<void> {
    const sbx = this.live(id);
    if (sbx.paused) return;
    await this.driver.pause(id);
    sbx.paused = true;
  }

  async resume(id: string): Promise<void> {
    const sbx = this.live(id);
    if (!sbx.paused) return;
    await this.driver.resume(id);
    sbx.paused = false;
    await sbx.channel.waitReady(this.config.readyTimeoutMs);
  }

  /**
   * Captures memory, processes and files of a running sandbox into imageDir
   * while it goes on running; it is unavailable only for the capture itself.
   * Returns the spec to restore copies with and how long the sandbox was held.
   */
  async capture(id: string, imageDir: string): Promise<{ spec: SandboxSpec; pausedMs: number }> {
    const sbx = this.live(id);
    if (sbx.paused) await this.resume(id);
    const spec = JSON.parse(await readFile(join(sbx.workDir, SPEC_FILE), 'utf8')) as SandboxSpec;
    const started = performance.now();
    try {
      await sbx.channel.prepareCheckpoint();
      await rm(imageDir, { recursive: true, force: true });
      await this.driver.checkpoint(id, imageDir, { leaveRunning: true });
    } finally {
      // The agent dials back in as soon as its socket is there again.
      await sbx.channel.listen();
    }
    await sbx.channel.waitReady(this.config.readyTimeoutMs);
    return { spec, pausedMs: performance.now() - started };
  }

  /**
   * Saves the whole sandbox (memory, processes, files) to disk and stops it:
   * its memory reservation is released and nothing of it runs until wake.
   */
  async hibernate(id: string): Promise<void> {
    const sbx = this.live(id);
    if (sbx.paused) await this.resume(id);
    const image = join(sbx.workDir, HIBERNATION_IMAGE);
    try {
      await sbx.channel.prepareCheckpoint();
      await rm(image, { recursive: true, force: true });
      await this.driver.checkpoint(id, image);
    } catch (err) {
      // Still running: let the agent dial back in and keep serving.
      await sbx.channel.listen().catch(() => undefined);
      throw err;
    }
    this.config.egress?.detach(id);
    // The image is complete (the written files too): stop what is left of the
    // sandbox now, and let the runtime forget it and its disk be released in the
    // background; wake waits for that, to reuse the id (and retries the release).
    await sbx.channel.close();
    this.sandboxes.delete(id);
    this.reservedMb -= sbx.memoryMb;
    await this.driver.kill(id);
    this.teardown(id, async () => {
      await this.driver.destroy(id);
      await releaseSandboxDisk(sbx.workDir);
    });
  }

  /** Restores a hibernated sandbox from its image, admitted against the memory budget again. */
  async wake(id: string, env: Record<string, string>, network?: SandboxNetwork): Promise<void> {
    if (this.sandboxes.has(id)) return;
    await this.teardowns.get(id);
    const workDir = join(this.config.sandboxesDir, id);
    const image = join(workDir, HIBERNATION_IMAGE);
    const spec = JSON.parse(await readFile(join(workDir, SPEC_FILE), 'utf8')) as SandboxSpec;
    const storage = await readFile(join(workDir, STORAGE_FILE), 'utf8').then(
      (t) => JSON.parse(t) as SandboxStorage,
      () => ({ diskMb: null, volumes: [] }),
    );
    this.reserve(id, spec.memoryMb);
    const undo = new Undo();
    undo.push(async () => (this.reservedMb -= spec.memoryMb));
    try {
      await releaseSandboxDisk(workDir); // whatever a failed hibernate left mounted
      undo.push(() => releaseSandboxDisk(workDir));
      await this.prepareDisk(workDir, storage, spec.filestoreDir !== undefined);
      const channel = new GuestChannel(join(spec.channelDir, 'agent.sock'), (): GuestHello => ({
        sandbox_id: id,
        env,
        egress,
      }));
      // The hello is sent only once the guest dials in, after this line.
      const egress = this.attachEgress(id, channel, network);
      undo.push(async () => this.config.egress?.detach(id));
      await channel.listen();
      undo.push(() => channel.close());
      undo.push(() => this.driver.destroy(id));
      await this.driver.restore(spec, image);
      await channel.waitReady(this.config.readyTimeoutMs);
      this.sandboxes.set(id, { id, memoryMb: spec.memoryMb, channel, workDir, paused: false });
    } catch (err) {
      await undo.run(); // the image stays: the sandbox is still hibernated
      throw err;
    }
    await rm(image, { recursive: true, force: true });
  }

  /** Stops every process in the sandbox but its agent: a disk-only fork starts clean. */
  async resetProcesses(id: string): Promise<void> {
    await this.live(id).channel.json({ method: 'POST', path: GUEST_PATHS.reset });
  }

  /** CPU time the sandbox has used, in nanoseconds (null when the runtime cannot tell). */
  async cpuUsageNs(id: string): Promise<number | null> {
    if (!this.sandboxes.has(id)) return null;
    return this.driver.cpuUsageNs(id);
  }

  /**
   * Gives the sandbox its egress policy and the channel its egress token: the
   * guest relays connections to the host with it. None with the fake driver,
   * whose "sandboxes" are host processes (it must not touch the host's proxy
   * settings or trust store).
   */
  private attachEgress(
    id: string,
    channel: GuestChannel,
    network: SandboxNetwork | undefined,
  ): GuestEgress | undefined {
    const proxy = this.config.egress;
    if (!proxy || this.driver.name === 'fake') return undefined;
    proxy.configure(id, network?.policy ?? { mode: 'none' }, network?.secrets ?? []);
    const token = randomBytes(DATA_TOKEN_BYTES / 2).toString('hex');
    channel.acceptEgress(token, (socket) => proxy.handle(id, socket));
    return { token, ca_pem: proxy.caPem };
  }

  /** Checks a policy (its presets included) and secrets; throws INVALID_NETWORK_POLICY. */
  checkNetwork(network: SandboxNetwork): void {
    checkNetwork(network, this.config.egress?.options.presets ?? BUILTIN_PRESETS);
  }

  /** Changes the egress policy (and secrets) of a running sandbox; open connections stay. */
  setNetwork(id: string, network: SandboxNetwork): void {
    this.live(id);
    if (this.driver.name !== 'fake')
      this.config.egress?.configure(id, network.policy, network.secrets);
  }

  channel(id: string): GuestChannel {
    const sbx = this.sandboxes.get(id);
    if (!sbx)
      throw new WarrenError(
        'SANDBOX_NOT_RUNNING',
        `sandbox ${id} is not running on host ${this.id}`,
      );
    return sbx.channel;
  }

  has(id: string): boolean {
    return this.sandboxes.has(id);
  }

  /** Runtime teardowns still running in the background, by sandbox (awaited by close). */
  private readonly teardowns = new Map<string, Promise<void>>();

  private teardown(id: string, work: () => Promise<unknown>): void {
    const previous = this.teardowns.get(id) ?? Promise.resolve();
    const done: Promise<void> = previous
      .then(work)
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        if (this.teardowns.get(id) === done) this.teardowns.delete(id);
      });
    this.teardowns.set(id, done);
  }

  /**
   * Stops a sandbox at once and releases its memory reservation; the runtime's
   * slower removal of its state finishes in the background. Safe to repeat.
   */
  async destroySandbox(id: string): Promise<void> {
    const sbx = this.sandboxes.get(id);
    this.sandboxes.delete(id);
    this.config.egress?.detach(id);
    if (sbx) {
      this.reservedMb -= sbx.memoryMb;
      await sbx.channel.close();
    }
    await this.driver.kill(id);
    const workDir = join(this.config.sandboxesDir, id);
    this.teardown(id, async () => {
      await this.driver.destroy(id);
      // Throws if a mount cannot be removed: then the directory stays, and the volume's data too.
      await releaseSandboxDisk(workDir);
      await rm(workDir, { recursive: true, force: true });
    });
  }

  /** Waits until every background teardown has finished. */
  async settle(): Promise<void> {
    while (this.teardowns.size > 0) await Promise.all([...this.teardowns.values()]);
  }

  /**
   * After a restart: takes back the sandboxes the store says are running here
   * (their guest agents redial the new listener) and destroys what the runtime
   * holds that nobody knows about. Returns the ids that could not be recovered.
   */
  async reconcile(
    expected: Array<Omit<CreateOnHost, 'template' | 'cpu'> & { paused?: boolean }>,
    /** Hibernated here: only their image on disk is kept; the runtime may still hold a stopped copy. */
    hibernated: string[] = [],
  ): Promise<string[]> {
    for (const id of hibernated) this.teardown(id, () => this.driver.destroy(id));
    const running = new Set(await this.driver.list());
    const lost: string[] = [];
    for (const sbx of expected) {
      if (!running.has(sbx.id)) {
        lost.push(sbx.id);
        await this.destroySandbox(sbx.id);
        continue;
      }
      running.delete(sbx.id);
      const workDir = join(this.config.sandboxesDir, sbx.id);
      const channel = new GuestChannel(join(workDir, 'chan', 'agent.sock'), () => ({
        sandbox_id: sbx.id,
        env: sbx.env,
        egress,
      }));
      // The hello is sent only once the guest dials in, after this line.
      const egress = this.attachEgress(sbx.id, channel, sbx.network);
      await mkdir(join(workDir, 'chan'), { recursive: true });
      await channel.listen();
      this.sandboxes.set(sbx.id, {
        id: sbx.id,
        memoryMb: sbx.memoryMb,
        channel,
        workDir,
        paused: sbx.paused === true,
      });
      this.reservedMb += sbx.memoryMb;
      // A paused agent cannot dial; it will when resumed.
      if (sbx.paused) continue;
      try {
        await channel.waitReady(this.config.readyTimeoutMs);
      } catch {
        lost.push(sbx.id);
        await this.destroySandbox(sbx.id);
      }
    }
    for (const orphan of running) {
      await this.driver.destroy(orphan);
      await releaseSandboxDisk(join(this.config.sandboxesDir, orphan)).catch(() => undefined);
    }
    return lost;
  }

  /** Closes channels; with destroy, also removes every sandbox (tests, and `warren down`). */
  async close(opts: { destroy?: boolean } = {}): Promise<void> {
    for (const id of [...this.sandboxes.keys()]) {
      if (opts.destroy) await this.destroySandbox(id);
      else await this.sandboxes.get(id)?.channel.close();
    }
    await this.settle();
  }
}
