/**
 * HostRouter: the control plane's one HostApi over every host it reaches.
 * A call about a sandbox goes to the host that owns it (its record's
 * host_id); a new sandbox or volume goes where placement put it (the record
 * is written first, see ../sandboxes/create.ts); calls about no sandbox go
 * to every host (snapshot deletes, listings) or to one (archive objects, in
 * the shared store). With only the in-process agent, every call goes
 * straight to it.
 */
import {
  WarrenError,
  type BuildProgress,
  type HostApi,
  type HostArchiveApi,
  type HostCapacity,
  type HostInfo,
  type HostSandboxApi,
  type HostSnapshotApi,
  type HostTemplateApi,
  type HostVolumeApi,
  type Template,
} from '@warren/protocol';
import type { Store } from '../store/store';

/** Routes every method of a group by its first argument, a sandbox id. */
function bySandbox<G extends object>(pick: (id: string) => Promise<G>): G {
  return new Proxy({} as G, {
    get:
      (_t, method: string) =>
      async (...args: unknown[]) => {
        const group = (await pick(String(args[0]))) as Record<string, (...a: unknown[]) => unknown>;
        return group[method]!(...args);
      },
  });
}

export class HostRouter implements HostApi {
  readonly id: string;
  private readonly remote = new Map<string, HostApi>();
  /** Where captures and volumes made through this router live, before any record names them. */
  private readonly captures = new Map<string, string>();
  private readonly volumeHosts = new Map<string, string>();
  /** Where the next create of a sandbox id goes (set by placement just before). */
  private readonly placed = new Map<string, string>();
  /** Whether this control plane leads the shared background work (set by the platform). */
  leads: () => boolean = () => true;
  /** Whether hosts share templates through the snapshot store (an S3 store; set by the platform). */
  sharesTemplates = false;
  private readonly sharing = new Map<string, Promise<void>>();
  /** `<host>\n<template>` seen ready (forgotten when the template is removed). */
  private readonly hasTemplate = new Set<string>();
  /** Once an agent has joined, every call looks up its sandbox's host (it may be gone). */
  private joined = false;

  constructor(
    readonly local: HostApi,
    private readonly store: Store,
  ) {
    this.id = local.id;
  }

  /** Adds (or replaces) the connection to a host. */
  connect(host: HostApi): void {
    this.remote.set(host.id, host);
    this.joined = true;
  }

  /** Forgets a host's connection and closes it (its sandboxes stay). */
  async disconnect(id: string): Promise<void> {
    const host = this.remote.get(id);
    this.remote.delete(id);
    for (const key of this.hasTemplate) if (key.startsWith(`${id}\n`)) this.hasTemplate.delete(key);
    await host?.close().catch(() => undefined);
  }

  /** Ids of the hosts reached now: the local one first. */
  ids(): string[] {
    return [this.local.id, ...this.remote.keys()];
  }

  connected(id: string): boolean {
    return id === this.local.id || this.remote.has(id);
  }

  /** The connection of host `id`; HOST_UNREACHABLE when there is none. */
  host(id: string): HostApi {
    if (id === this.local.id) return this.local;
    const host = this.remote.get(id);
    if (!host) throw new WarrenError('HOST_UNREACHABLE', `host ${id} is not connected`);
    return host;
  }

  private all(): HostApi[] {
    return [this.local, ...this.remote.values()];
  }

  /** The host a sandbox is on, by its record. */
  async ofSandbox(sandboxId: string): Promise<HostApi> {
    if (!this.joined) return this.local;
    const placed = this.placed.get(sandboxId);
    if (placed) return this.host(placed);
    const rec = await this.store.getSandboxById(sandboxId);
    return this.host(rec?.host_id ?? this.local.id);
  }

  private async ofVolume(volumeId: string): Promise<HostApi> {
    if (!this.joined) return this.local;
    const known = this.volumeHosts.get(volumeId);
    if (known) return this.host(known);
    const v = await this.store.db
      .selectFrom('volumes')
      .select('host_id')
      .where('id', '=', volumeId)
      .executeTakeFirst();
    const db = v
      ? undefined
      : await this.store.db
          .selectFrom('databases')
          .select('host_id')
          .where('volume_id', '=', volumeId)
          .executeTakeFirst();
    return this.host(v?.host_id ?? db?.host_id ?? this.local.id);
  }

  /** Placement's decision for a sandbox about to be created, or a volume about to be made. */
  placeSandbox(sandboxId: string, hostId: string): void {
    this.placed.set(sandboxId, hostId);
  }

  placeVolume(volumeId: string, hostId: string): void {
    this.volumeHosts.set(volumeId, hostId);
  }

  /** The host holding a volume (placement puts its sandboxes there). */
  async volumeHost(volumeId: string): Promise<string> {
    return (await this.ofVolume(volumeId)).id;
  }

  /** The host holding a capture (fork children are restored there). */
  captureHost(captureId: string): string {
    return this.captures.get(captureId) ?? this.local.id;
  }

  private on(sandboxId: string): Promise<HostSandboxApi> {
    return this.ofSandbox(sandboxId).then((h) => h.sandboxes);
  }

  info(): Promise<HostInfo> {
    return this.local.info();
  }

  capacity(): Promise<HostCapacity> {
    return this.local.capacity();
  }

  readonly sandboxes: HostSandboxApi = {
    destroy: async (id) => (await this.on(id)).destroy(id),
    pause: async (id) => (await this.on(id)).pause(id),
    resume: async (id) => (await this.on(id)).resume(id),
    hibernate: async (id, o) => (await this.on(id)).hibernate(id, o),
    wake: async (id, o) => (await this.on(id)).wake(id, o),
    snapshot: async (id, snapshotId) => (await this.on(id)).snapshot(id, snapshotId),
    cpuUsageNs: async (id) => (await this.on(id)).cpuUsageNs(id),
    oomKilled: async (id) => (await this.on(id)).oomKilled(id),
    usage: async (id) => (await this.on(id)).usage(id),
    reclaim: async (id) => (await this.on(id)).reclaim(id),
    setNetwork: async (id, network) => (await this.on(id)).setNetwork(id, network),
    openPort: async (id, port, options) => (await this.on(id)).openPort(id, port, options),
    create: async (req) => {
      const host = await this.ofSandbox(req.id);
      try {
        await this.shareTemplate(host, req.template);
        return await host.sandboxes.create(req);
      } finally {
        this.placed.delete(req.id);
      }
    },
    capture: async (id) => {
      const host = await this.ofSandbox(id);
      const capture = await host.sandboxes.capture(id);
      this.captures.set(capture.capture_id, host.id);
      return capture;
    },
    releaseCapture: async (captureId) => {
      const host = this.host(this.captureHost(captureId));
      this.captures.delete(captureId);
      await host.sandboxes.releaseCapture(captureId);
    },
    // A host that does not answer fails the whole answer: its sandboxes are not dead.
    live: async () => (await Promise.all(this.all().map((h) => h.sandboxes.live()))).flat(),
    checkNetwork: (network) => this.local.sandboxes.checkNetwork(network),
    reconcile: (expected, hibernated) => this.local.sandboxes.reconcile(expected, hibernated),
  };

  readonly processes = bySandbox<HostApi['processes']>((id) =>
    this.ofSandbox(id).then((h) => h.processes),
  );
  readonly pty = bySandbox<HostApi['pty']>((id) => this.ofSandbox(id).then((h) => h.pty));
  readonly code = bySandbox<HostApi['code']>((id) => this.ofSandbox(id).then((h) => h.code));
  readonly files = bySandbox<HostApi['files']>((id) => this.ofSandbox(id).then((h) => h.files));

  /**
   * Templates: builds run on the control plane's own host (an agent builds
   * the built-in ones it lacks when it starts); other hosts fetch them through
   * the shared store when a sandbox is placed there (shareTemplate). Listings
   * merge, the local host's record first.
   */
  readonly templates: HostTemplateApi = {
    list: async () => {
      const seen = new Map<string, Template>();
      for (const h of this.all()) {
        const list = await h.templates.list().catch(() => [] as Template[]);
        for (const t of list) if (!seen.has(t.name)) seen.set(t.name, t);
      }
      return [...seen.values()];
    },
    get: async (name) => {
      for (const h of this.all()) {
        const t = await h.templates.get(name).catch(() => null);
        if (t) return t;
      }
      return null;
    },
    ensure: (names, progress) => this.local.templates.ensure(names, progress),
    build: (req, progress) => this.local.templates.build(req, progress),
    checkNew: (name) => this.local.templates.checkNew(name),
    buildFromImage: (name, image, o, progress) =>
      this.local.templates.buildFromImage(name, image, o, progress),
    rebuildReplacesRoot: (name) => this.local.templates.rebuildReplacesRoot(name),
    rebuild: async (name, progress) => {
      const newRoot = await this.local.templates.rebuildReplacesRoot(name);
      const built = await this.local.templates.rebuild(name, progress);
      await this.spreadRebuild(name, newRoot, progress);
      return built;
    },
    remove: async (name) => {
      for (const h of this.remote.values())
        if (await h.templates.get(name).catch(() => null)) await h.templates.remove(name);
      await this.local.templates.remove(name);
      this.forgetTemplate(name);
    },
    publish: (name) => this.local.templates.publish(name),
    fetch: (name, imageId, o) => this.local.templates.fetch(name, imageId, o),
  };

  /**
   * Before a sandbox or a seeded volume is made on a host that lacks its
   * template: with a shared store, a host that has it publishes it there (once
   * per build) and this host fetches it. Without one, or when no host has it,
   * the create goes on and fails with the host's own error.
   */
  private async shareTemplate(to: HostApi, name: string): Promise<void> {
    if (!this.sharesTemplates || !this.joined) return;
    const key = `${to.id}\n${name}`;
    let sharing = this.sharing.get(key);
    if (!sharing) {
      sharing = this.fetchOnto(to, name).finally(() => this.sharing.delete(key));
      this.sharing.set(key, sharing);
    }
    await sharing;
  }

  private async fetchOnto(to: HostApi, name: string): Promise<void> {
    const key = `${to.id}\n${name}`;
    if (this.hasTemplate.has(key)) return;
    if ((await to.templates.get(name))?.state !== 'ready') {
      const from = await this.withTemplate(to, name);
      if (!from) return;
      await to.templates.fetch(name, await from.templates.publish(name));
    }
    this.hasTemplate.add(key);
  }

  /**
   * After a rebuild on this host, the hosts that fetched an earlier build:
   * when the root was built again (which nothing may use), their copy is
   * removed and the new build is fetched when a sandbox is placed there; when
   * only the snapshot was baked again, they fetch it now and keep their root.
   * A host that cannot be reached keeps its copy (listed in the build log).
   */
  private async spreadRebuild(name: string, newRoot: boolean, progress: BuildProgress) {
    this.forgetTemplate(name);
    if (!this.sharesTemplates) return;
    let image: Promise<string> | undefined; // published once, for every host that needs it
    for (const h of this.remote.values()) {
      try {
        if ((await h.templates.get(name))?.state !== 'ready') continue;
        if (newRoot) {
          await h.templates.remove(name);
          progress(`host ${h.id}: its copy of the previous build removed (it fetches this one)`);
        } else {
          image ??= this.local.templates.publish(name);
          await h.templates.fetch(name, await image, { keepRoot: true });
          progress(`host ${h.id}: fetched the new snapshot`);
        }
      } catch (err) {
        progress(`host ${h.id} keeps the previous build: ${(err as Error).message}`);
      }
    }
  }

  /** Which hosts are known to have a template: asked again after it changes. */
  private forgetTemplate(name: string): void {
    for (const key of this.hasTemplate) if (key.endsWith(`\n${name}`)) this.hasTemplate.delete(key);
  }

  /** Another host that has the template ready. */
  private async withTemplate(not: HostApi, name: string): Promise<HostApi | null> {
    for (const h of this.all())
      if (h !== not && (await h.templates.get(name).catch(() => null))?.state === 'ready') return h;
    return null;
  }

  readonly volumes: HostVolumeApi = {
    create: async (id, sizeMb, o) => {
      const host = await this.ofVolume(id);
      if (o?.seed) await this.shareTemplate(host, o.seed.template);
      return host.volumes.create(id, sizeMb, o);
    },
    remove: async (id) => {
      await (await this.ofVolume(id)).volumes.remove(id);
      this.volumeHosts.delete(id);
    },
    usedBytes: async (id) => (await this.ofVolume(id)).volumes.usedBytes(id),
    mount: async (id) => (await this.ofVolume(id)).volumes.mount(id),
    clone: async (from, to, o) => {
      const host = await this.ofVolume(from);
      this.volumeHosts.set(to, host.id);
      await host.volumes.clone(from, to, o);
    },
  };

  readonly snapshots: HostSnapshotApi = {
    delete: async (snapshotId) => {
      for (const h of this.remote.values())
        await h.snapshots.delete(snapshotId).catch(() => undefined);
      await this.local.snapshots.delete(snapshotId);
    },
  };

  /** The archive is one store for every host; calls about a sandbox's files go to its host. */
  readonly archive: HostArchiveApi = {
    collect: async (sandboxId, dir, prefix, fence) =>
      (await this.ofSandbox(sandboxId)).archive.collect(sandboxId, dir, prefix, fence),
    upload: async (sandboxId, path, key) =>
      (await this.ofSandbox(sandboxId)).archive.upload(sandboxId, path, key),
    put: (key, body) => this.local.archive.put(key, body),
    get: (key) => this.local.archive.get(key),
    list: (prefix) => this.local.archive.list(prefix),
    remove: (prefix) => this.local.archive.remove(prefix),
  };

  async close(o?: { destroy?: boolean }): Promise<void> {
    for (const id of [...this.remote.keys()]) await this.disconnect(id);
    await this.local.close(o);
  }
}

/**
 * The hosts whose background work (sweeps, database watches and archiving,
 * usage samples) is this control plane's: its own in-process host, and every
 * joined one it reaches while it leads (store/leader.ts).
 */
export function hostIds(host: HostApi): string[] {
  if (!(host instanceof HostRouter)) return [host.id];
  return host.leads() ? host.ids() : [host.local.id];
}

/** Whether this control plane leads the install's shared background work. */
export function leads(host: HostApi): boolean {
  return !(host instanceof HostRouter) || host.leads();
}
