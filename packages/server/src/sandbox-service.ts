/**
 * Control-plane logic of sandboxes: validation against templates, records
 * and state changes in the store, placement on the host agent, TTL.
 */
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  WarrenError,
  newId,
  type CreateSandboxRequest,
  type ForkRequest,
  type ForkTreeRequest,
  type Sandbox,
  type SandboxState,
  type Snapshot,
  type VolumeAttachment,
} from '@warren/protocol';
import type { GuestChannel, HostAgent, SandboxNetwork, SandboxSpec } from '@warren/host-agent';
import type { Config } from './config';
import { newPreviewToken, previewUrl } from './preview/token';
import { hashToken } from './auth';
import type { SandboxRow, SnapshotRow, Store } from './store/store';
import type { VolumeService } from './volume-service';

export function toApi(row: SandboxRow, previewTemplate?: string): Sandbox {
  return {
    id: row.id,
    org_id: row.org_id,
    template: row.template,
    state: row.state as SandboxState,
    cpu: row.cpu,
    memory_mb: row.memory_mb,
    disk_mb: row.disk_mb ?? 0,
    volumes: JSON.parse(row.volumes) as VolumeAttachment[],
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    env_keys: Object.keys(JSON.parse(row.env) as Record<string, string>),
    ttl_seconds: row.ttl_seconds,
    host_id: row.host_id,
    created_at: row.created_at,
    last_activity_at: row.last_activity_at,
    expires_at: row.expires_at,
    stopped_at: row.stopped_at,
    stop_reason: row.stop_reason,
    parent_id: row.parent_id,
    snapshot_id: row.snapshot_id,
    lineage: JSON.parse(row.lineage) as string[],
    fork_kind: row.fork_kind === 'memory' || row.fork_kind === 'disk' ? row.fork_kind : null,
    persistent: row.persistent === 1,
    idle_timeout_seconds: row.idle_timeout_seconds,
    preview_url: previewUrl(previewTemplate, row.id),
    preview_auth: row.preview_auth === 1,
  };
}

/** The API view of a snapshot: its host and the parent's env stay internal. */
export function snapshotToApi(row: SnapshotRow): Snapshot {
  const { host_id, env, lineage, network, disk_mb, ...api } = row;
  return api;
}

interface LaunchOptions {
  template: string;
  cpu?: number;
  memoryMb?: number;
  diskMb?: number;
  volumes?: VolumeAttachment[];
  env: Record<string, string>;
  metadata?: Record<string, string>;
  ttlSeconds?: number;
  persistent?: boolean;
  idleTimeoutSeconds?: number;
  parentId?: string;
  /** The parent's ancestors, the root first; the parent itself is added here. */
  parentLineage?: string[];
  forkKind?: 'memory' | 'disk';
  snapshotId?: string;
  from?: { imageDir: string; spec: SandboxSpec };
  /** Stop every process the image brought along (a disk-only fork). */
  reset?: boolean;
  /** Preview URLs need a token; a fork child passes its parent's token hash. */
  preview?: { auth: boolean; tokenHash?: string | null };
  network: SandboxNetwork;
  /** Recorded as the cause of the change to running. */
  cause: string;
}

/** The stored network of a sandbox or snapshot; records from before networking have none. */
export function parseNetwork(text: string | null): SandboxNetwork {
  return text ? (JSON.parse(text) as SandboxNetwork) : { policy: { mode: 'none' }, secrets: [] };
}

function later(from: Date, seconds: number): string {
  return new Date(from.getTime() + seconds * 1000).toISOString();
}

export class SandboxService {
  constructor(
    private readonly store: Store,
    private readonly host: HostAgent,
    private readonly config: Config,
    private readonly volumes: VolumeService,
  ) {}

  async create(orgId: string, req: CreateSandboxRequest): Promise<Sandbox> {
    if (req.from_snapshot) {
      const snap = await this.snapshotRow(orgId, req.from_snapshot);
      const kept = parseNetwork(snap.network);
      const source = await this.snapshotSource(snap.id);
      try {
        return await this.launch(orgId, {
          network: { policy: req.network ?? kept.policy, secrets: req.secrets ?? kept.secrets },
          template: snap.template,
          cpu: req.cpu ?? snap.cpu,
          memoryMb: req.memory_mb ?? snap.memory_mb,
          // The captured files must fit: by default the disk of the sandbox it was taken from.
          diskMb: req.disk_mb ?? snap.disk_mb ?? undefined,
          volumes: req.volumes,
          env: { ...(JSON.parse(snap.env) as Record<string, string>), ...req.env },
          metadata: req.metadata,
          ttlSeconds: req.ttl_seconds,
          persistent: req.persistent,
          idleTimeoutSeconds: req.idle_timeout_seconds,
          parentId: snap.sandbox_id,
          parentLineage: JSON.parse(snap.lineage) as string[],
          forkKind: 'memory',
          snapshotId: snap.id,
          from: source,
          preview: { auth: req.preview_auth === true },
          cause: `restored from snapshot ${snap.id}`,
        });
      } finally {
        await rm(dirname(source.imageDir), { recursive: true, force: true });
      }
    }
    return this.launch(orgId, {
      network: { policy: req.network ?? this.config.networkDefault, secrets: req.secrets ?? [] },
      template: req.template,
      cpu: req.cpu,
      memoryMb: req.memory_mb,
      diskMb: req.disk_mb,
      volumes: req.volumes,
      env: req.env ?? {},
      metadata: req.metadata,
      ttlSeconds: req.ttl_seconds,
      persistent: req.persistent,
      idleTimeoutSeconds: req.idle_timeout_seconds,
      preview: { auth: req.preview_auth === true },
      cause: 'restored from template snapshot',
    });
  }

  /** Records a new sandbox and has the host restore it; on failure nothing of it remains. */
  private async launch(orgId: string, o: LaunchOptions): Promise<Sandbox> {
    this.host.checkNetwork(o.network);
    const template = await this.host.templates.get(o.template);
    const cpu = o.cpu ?? template.default_cpu;
    const memoryMb = o.memoryMb ?? template.default_memory_mb;
    if (cpu > template.max_cpu || memoryMb > template.max_memory_mb || memoryMb < 64) {
      throw new WarrenError(
        'RESOURCES_OUT_OF_RANGE',
        `template ${template.name} allows cpu up to ${template.max_cpu} and memory_mb from 64 to ${template.max_memory_mb}`,
        { max_cpu: template.max_cpu, max_memory_mb: template.max_memory_mb },
      );
    }
    const diskMb = o.diskMb ?? template.default_disk_mb;
    if (diskMb > template.max_disk_mb || diskMb < 64) {
      throw new WarrenError(
        'RESOURCES_OUT_OF_RANGE',
        `template ${template.name} allows disk_mb from 64 to ${template.max_disk_mb}`,
        { max_disk_mb: template.max_disk_mb },
      );
    }
    const volumes = o.volumes ?? [];
    this.volumes.validate(volumes);
    const now = new Date();
    const ttl = o.ttlSeconds ?? this.config.defaultTtlSeconds;
    const previewAuth = o.preview?.auth === true;
    const previewToken = previewAuth && !o.preview?.tokenHash ? newPreviewToken() : undefined;
    const row: SandboxRow = {
      id: newId('sandbox'),
      org_id: orgId,
      host_id: this.host.id,
      template: template.name,
      state: 'creating',
      cpu,
      memory_mb: memoryMb,
      metadata: JSON.stringify(o.metadata ?? {}),
      env: JSON.stringify(o.env),
      ttl_seconds: ttl,
      created_at: now.toISOString(),
      last_activity_at: now.toISOString(),
      expires_at: later(now, ttl),
      stopped_at: null,
      stop_reason: null,
      parent_id: o.parentId ?? null,
      snapshot_id: o.snapshotId ?? null,
      lineage: JSON.stringify(o.parentId ? [...(o.parentLineage ?? []), o.parentId] : []),
      persistent: o.persistent ? 1 : 0,
      idle_timeout_seconds: o.idleTimeoutSeconds ?? this.config.defaultIdleTimeoutSeconds,
      fork_kind: o.forkKind ?? '',
      preview_auth: previewAuth ? 1 : 0,
      preview_token_hash: previewToken ? hashToken(previewToken) : (o.preview?.tokenHash ?? null),
      network: JSON.stringify(o.network),
      disk_mb: diskMb,
      volumes: JSON.stringify(volumes),
    };
    await this.store.insertSandbox(row, 'create');
    try {
      await this.host.createSandbox({
        id: row.id,
        template: template.name,
        cpu,
        memoryMb,
        diskMb,
        volumes: await this.volumes.attach(orgId, row.id, volumes),
        env: o.env,
        from: o.from,
        network: o.network,
      });
      if (o.reset) await this.host.resetProcesses(row.id);
    } catch (err) {
      if (o.reset) await this.host.destroySandbox(row.id);
      // Nothing half-created survives: the host agent has already undone its part.
      await this.volumes.detach(row.id);
      await this.store.deleteSandboxRow(row.id);
      throw err;
    }
    await this.store.setState(row.id, 'running', o.cause);
    await this.touch(row); // idle and TTL count from when it runs, not from the request
    const sandbox = await this.get(orgId, row.id);
    return previewToken ? { ...sandbox, preview_token: previewToken } : sandbox;
  }

  // ---- snapshots and forks ----

  /** A scratch directory for one capture or restore; removed when it is done. */
  private scratchDir(kind: 'capture' | 'restore' | 'fork'): string {
    return join(this.config.home, 'snapshots', `.${kind}-${newId('snapshot')}`);
  }

  /** The image of a snapshot as a directory (fetched from the store first if need be). */
  private async snapshotSource(id: string): Promise<{ imageDir: string; spec: SandboxSpec }> {
    const imageDir = join(this.scratchDir('restore'), 'image');
    try {
      const manifest = await this.host.snapshots.materialize<SandboxSpec>(id, imageDir);
      return { imageDir, spec: manifest.meta };
    } catch (err) {
      await rm(dirname(imageDir), { recursive: true, force: true });
      throw err;
    }
  }

  async snapshotRow(orgId: string, id: string): Promise<SnapshotRow> {
    const snap = await this.store.getSnapshot(orgId, id);
    if (!snap) throw new WarrenError('SNAPSHOT_NOT_FOUND', `snapshot ${id} does not exist`);
    return snap;
  }

  /** Captures memory, processes and files of a running sandbox; it goes on running. */
  /**
   * A capture of a sandbox with volumes is refused: its files there are not in
   * the image, and a fork must not share a writable volume.
   */
  private async refuseVolumes(orgId: string, id: string, what: string): Promise<void> {
    const names = (JSON.parse((await this.row(orgId, id)).volumes) as VolumeAttachment[]).map(
      (v) => v.name,
    );
    if (names.length > 0)
      throw new WarrenError(
        'SANDBOX_HAS_VOLUMES',
        `cannot ${what} sandbox ${id}: it has volumes attached (${names.join(', ')})`,
        { volumes: names },
      );
  }

  async snapshot(orgId: string, id: string): Promise<Snapshot> {
    await this.refuseVolumes(orgId, id, 'snapshot');
    await this.use(orgId, id); // wakes a paused or hibernated sandbox first
    const row = await this.row(orgId, id);
    const snapId = newId('snapshot');
    const dir = this.scratchDir('capture');
    return this.locked(id, async () => {
      try {
        const { spec, pausedMs } = await this.host.capture(id, join(dir, 'image'));
        const manifest = await this.host.snapshots.put(snapId, join(dir, 'image'), spec);
        const snap: SnapshotRow = {
          id: snapId,
          org_id: orgId,
          host_id: this.host.id,
          sandbox_id: id,
          template: row.template,
          cpu: row.cpu,
          memory_mb: row.memory_mb,
          env: row.env,
          lineage: row.lineage, // the sandbox's ancestors; children add the sandbox itself
          size_bytes: manifest.files.reduce((n, f) => n + f.size, 0),
          parent_pause_ms: Math.round(pausedMs),
          created_at: new Date().toISOString(),
          network: row.network,
          disk_mb: row.disk_mb,
        };
        try {
          await this.store.insertSnapshot(snap);
        } catch (err) {
          await this.host.snapshots.delete(snapId);
          throw err;
        }
        return snapshotToApi(snap);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  async deleteSnapshot(orgId: string, id: string): Promise<void> {
    await this.snapshotRow(orgId, id);
    await this.store.deleteSnapshot(id);
    // Restored sandboxes hold no reference to the image: it is read whole at restore.
    // Its files go once no other snapshot shares them.
    await this.host.snapshots.delete(id);
  }

  /**
   * N children from one capture of the parent's memory and files. The parent
   * keeps running; it is held only for the capture. All or nothing.
   */
  async forkTree(orgId: string, id: string, req: ForkTreeRequest) {
    await this.refuseVolumes(orgId, id, 'fork');
    await this.use(orgId, id);
    const parent = await this.row(orgId, id);
    const { memory_budget_mb, memory_reserved_mb } = this.host.capacity();
    const need = parent.memory_mb * req.count;
    if (need > memory_budget_mb - memory_reserved_mb) {
      throw new WarrenError(
        'INSUFFICIENT_CAPACITY',
        `${req.count} children of ${parent.memory_mb} MiB need ${need} MiB; ${memory_budget_mb - memory_reserved_mb} MiB free`,
        { requested_mb: need, free_mb: memory_budget_mb - memory_reserved_mb },
      );
    }
    const dir = this.scratchDir('fork');
    try {
      const { spec, pausedMs } = await this.locked(id, () =>
        this.host.capture(id, join(dir, 'image')),
      );
      const launched = await Promise.allSettled(
        Array.from({ length: req.count }, () =>
          this.launch(orgId, {
            ...this.inherit(parent, req),
            forkKind: 'memory',
            from: { imageDir: join(dir, 'image'), spec },
            cause: `forked from ${id}`,
          }),
        ),
      );
      const children = launched.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const failed = launched.find((r) => r.status === 'rejected');
      if (failed) {
        for (const c of children)
          await this.destroy(orgId, c.id, 'fork-tree failed').catch(() => undefined);
        throw failed.reason;
      }
      return { parent_id: id, parent_pause_ms: Math.round(pausedMs), children };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * What a fork child takes from its parent besides the image: sizing, env,
   * lineage and lifecycle settings; labels and TTL unless the request sets them.
   */
  private inherit(
    parent: SandboxRow,
    req: ForkRequest,
  ): Omit<LaunchOptions, 'forkKind' | 'from' | 'cause'> {
    return {
      template: parent.template,
      cpu: parent.cpu,
      memoryMb: parent.memory_mb,
      env: JSON.parse(parent.env) as Record<string, string>,
      metadata: req.metadata ?? (JSON.parse(parent.metadata) as Record<string, string>),
      ttlSeconds: req.ttl_seconds ?? parent.ttl_seconds,
      parentId: parent.id,
      parentLineage: JSON.parse(parent.lineage) as string[],
      persistent: parent.persistent === 1,
      idleTimeoutSeconds: parent.idle_timeout_seconds,
      preview: { auth: parent.preview_auth === 1, tokenHash: parent.preview_token_hash },
      network: parseNetwork(parent.network),
      // The parent's files must fit.
      diskMb: parent.disk_mb ?? undefined,
    };
  }

  /**
   * A new sandbox with a copy of the parent's files, started fresh. It is
   * restored from a capture of the parent (the quickest consistent copy of
   * its files) and then every process the capture brought along is stopped
   * before anyone can use it: the child runs none of the parent's programs
   * and holds none of their memory.
   */
  async fork(orgId: string, id: string, req: ForkRequest): Promise<Sandbox> {
    await this.refuseVolumes(orgId, id, 'fork');
    await this.use(orgId, id);
    const parent = await this.row(orgId, id);
    const dir = this.scratchDir('fork');
    try {
      const { spec } = await this.locked(id, () => this.host.capture(id, join(dir, 'image')));
      return await this.launch(orgId, {
        ...this.inherit(parent, req),
        forkKind: 'disk',
        from: { imageDir: join(dir, 'image'), spec },
        reset: true,
        cause: `disk fork of ${id}`,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async row(orgId: string, id: string): Promise<SandboxRow> {
    const row = await this.store.getSandbox(orgId, id);
    if (!row) throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
    return row;
  }

  async get(orgId: string, id: string): Promise<Sandbox> {
    return toApi(await this.row(orgId, id), this.config.previewUrl);
  }

  /** Resolves a running sandbox for an operation on it and counts that as activity (TTL). */
  async use(orgId: string, id: string): Promise<GuestChannel> {
    // Under the sandbox's lock, so that a hibernate in progress finishes first.
    return this.locked(id, async () => {
      let row = await this.row(orgId, id);
      // A paused or hibernated sandbox is brought back first; the caller sees only latency.
      if (row.state === 'paused' || row.state === 'hibernated') {
        await this.change(row, row.state === 'paused' ? 'resume' : 'wake', 'implicit, on use');
        row = await this.row(orgId, id);
      }
      if (row.state !== 'running')
        throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is ${row.state}`);
      await this.touch(row);
      return this.host.channel(id);
    });
  }

  /** Requests open on each sandbox (exec streams, transfers): a sandbox with any is not idle. */
  private readonly operations = new Map<string, number>();

  /** Counts an operation as open until the returned function is called. */
  beginOperation(id: string): () => void {
    this.operations.set(id, (this.operations.get(id) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.operations.get(id) ?? 1) - 1;
      if (left > 0) this.operations.set(id, left);
      else this.operations.delete(id);
    };
  }

  /** One lifecycle change at a time per sandbox: concurrent requests wait for it. */
  private readonly locks = new Map<string, Promise<unknown>>();

  private async locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    this.locks.set(id, next);
    try {
      return await next;
    } finally {
      if (this.locks.get(id) === next) this.locks.delete(id);
    }
  }

  /** pause, resume, hibernate, wake: each allowed only from the states listed here. */
  private static readonly TRANSITIONS = {
    pause: { from: ['running'], to: 'paused' },
    resume: { from: ['paused'], to: 'running' },
    hibernate: { from: ['running', 'paused'], to: 'hibernated' },
    wake: { from: ['hibernated'], to: 'running' },
  } as const;

  async transition(
    row: SandboxRow,
    action: keyof typeof SandboxService.TRANSITIONS,
    cause: string,
    /** Checked under the lock, on the current record: false leaves the sandbox as it is. */
    still: (current: SandboxRow) => boolean = () => true,
  ): Promise<Sandbox> {
    return this.locked(row.id, async () => {
      const current = await this.row(row.org_id, row.id);
      if (still(current)) await this.change(current, action, cause);
      return this.get(row.org_id, row.id);
    });
  }

  /** Makes one lifecycle change; the caller holds the sandbox's lock. */
  private async change(
    current: SandboxRow,
    action: keyof typeof SandboxService.TRANSITIONS,
    cause: string,
  ): Promise<void> {
    const rule = SandboxService.TRANSITIONS[action];
    if (!(rule.from as readonly string[]).includes(current.state)) {
      throw new WarrenError(
        'INVALID_STATE',
        `cannot ${action} sandbox ${current.id}: it is ${current.state} (needs ${rule.from.join(' or ')})`,
      );
    }
    if (action === 'pause') await this.host.pause(current.id);
    else if (action === 'resume') await this.host.resume(current.id);
    else if (action === 'hibernate') await this.host.hibernate(current.id);
    else
      await this.host.wake(
        current.id,
        JSON.parse(current.env) as Record<string, string>,
        parseNetwork(current.network),
      );
    await this.store.setState(current.id, rule.to, `${action} (${cause})`);
  }

  async events(orgId: string, id: string) {
    await this.row(orgId, id);
    return this.store.sandboxEvents(id);
  }

  /** Counts the end of a long operation (an exec that ran for minutes) as activity too. */
  async activity(orgId: string, id: string): Promise<void> {
    const row = await this.store.getSandbox(orgId, id);
    if (row?.state === 'running') await this.touch(row);
  }

  private async touch(row: SandboxRow): Promise<void> {
    const now = new Date();
    await this.store.updateSandbox(row.id, {
      last_activity_at: now.toISOString(),
      expires_at: later(now, row.ttl_seconds),
    });
  }

  async update(
    orgId: string,
    id: string,
    patch: {
      metadata?: Record<string, string>;
      ttl_seconds?: number;
      persistent?: boolean;
      idle_timeout_seconds?: number;
    },
  ): Promise<Sandbox> {
    const row = await this.row(orgId, id);
    if (row.state === 'stopped')
      throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is stopped`);
    const now = new Date();
    const ttl = patch.ttl_seconds ?? row.ttl_seconds;
    await this.store.updateSandbox(id, {
      ...(patch.metadata ? { metadata: JSON.stringify(patch.metadata) } : {}),
      ttl_seconds: ttl,
      ...(patch.persistent !== undefined ? { persistent: patch.persistent ? 1 : 0 } : {}),
      ...(patch.idle_timeout_seconds !== undefined
        ? { idle_timeout_seconds: patch.idle_timeout_seconds }
        : {}),
      last_activity_at: now.toISOString(),
      expires_at: later(now, ttl),
    });
    return this.get(orgId, id);
  }

  /**
   * Replaces the egress policy (and, when given, the secrets) of a sandbox.
   * A running or paused one gets it at once; a hibernated one when it wakes.
   */
  async setNetwork(
    orgId: string,
    id: string,
    change: { policy: SandboxNetwork['policy']; secrets?: SandboxNetwork['secrets'] },
  ): Promise<SandboxNetwork> {
    return this.locked(id, async () => {
      const row = await this.row(orgId, id);
      if (row.state === 'stopped' || row.state === 'stopping')
        throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is ${row.state}`);
      const network = {
        policy: change.policy,
        secrets: change.secrets ?? parseNetwork(row.network).secrets,
      };
      this.host.checkNetwork(network);
      await this.store.updateSandbox(id, { network: JSON.stringify(network) });
      if (this.host.has(id)) this.host.setNetwork(id, network);
      return network;
    });
  }

  /** Destroys a sandbox; an already stopped one is left as it is (`deleted: false`). */
  async destroy(orgId: string, id: string, reason = 'deleted'): Promise<boolean> {
    return this.locked(id, async () => {
      const row = await this.row(orgId, id);
      if (row.state === 'stopped') return false;
      await this.stop(row, reason);
      return true;
    });
  }

  private async stop(row: SandboxRow, reason: string): Promise<void> {
    await this.store.setState(row.id, 'stopping', reason);
    await this.host.destroySandbox(row.id);
    await this.volumes.detach(row.id);
    await this.store.setState(row.id, 'stopped', reason, {
      stopped_at: new Date().toISOString(),
      stop_reason: reason,
    });
  }

  /**
   * Destroys sandboxes whose TTL has passed without activity; returns their ids.
   * Persistent sandboxes are never reaped, and a sandbox with a request still
   * open (a long exec stream) has not been idle: its deadline moves on.
   */
  async reapExpired(): Promise<string[]> {
    const reaped: string[] = [];
    for (const row of await this.store.expiredSandboxes(new Date().toISOString())) {
      if (row.persistent === 1) continue;
      if (this.operations.has(row.id)) {
        await this.touch(row);
        continue;
      }
      await this.destroy(row.org_id, row.id, 'ttl_expired');
      reaped.push(row.id);
    }
    return reaped;
  }

  /** CPU time of each running sandbox at the previous sweep. */
  private readonly cpuSamples = new Map<string, { ns: number; at: number }>();

  /** Percent of one CPU the sandbox used since the previous sample (null: no sample yet). */
  private async cpuPercent(id: string): Promise<number | null> {
    const ns = await this.host.cpuUsageNs(id);
    if (ns === null) return null;
    const now = performance.now();
    const prev = this.cpuSamples.get(id);
    this.cpuSamples.set(id, { ns, at: now });
    if (!prev || now <= prev.at) return null;
    return ((ns - prev.ns) / 1e6 / (now - prev.at)) * 100;
  }

  /**
   * Hibernates persistent sandboxes that have been idle for their idle timeout:
   * no API call, no request open on them, and CPU use under the threshold
   * since the previous sweep. Returns their ids.
   */
  async hibernateIdle(): Promise<string[]> {
    const now = Date.now();
    const hibernated: string[] = [];
    const rows = await this.store.sandboxesOnHost(this.host.id, ['running', 'paused']);
    for (const id of this.cpuSamples.keys()) {
      if (!rows.some((r) => r.id === id && r.state === 'running')) this.cpuSamples.delete(id);
    }
    for (const row of rows) {
      if (row.persistent !== 1) continue;
      // Sampled every sweep, so a sandbox that turns idle has a recent figure.
      const cpu = row.state === 'running' ? await this.cpuPercent(row.id) : 0;
      const idleFor = now - Date.parse(row.last_activity_at);
      if (idleFor < row.idle_timeout_seconds * 1000 || this.operations.has(row.id)) continue;
      if (cpu === null || cpu >= this.config.idleCpuPercent) continue;
      try {
        // Unless a request came in meanwhile.
        const after = await this.transition(
          row,
          'hibernate',
          `idle for ${Math.round(idleFor / 1000)} s`,
          (current) =>
            current.last_activity_at === row.last_activity_at && !this.operations.has(row.id),
        );
        if (after.state !== 'hibernated') continue;
        this.cpuSamples.delete(row.id);
        hibernated.push(row.id);
      } catch {
        // Changed state meanwhile (deleted, woken): the next sweep looks again.
      }
    }
    return hibernated;
  }

  /** After a restart: reattach to running sandboxes, mark the ones that are gone. */
  async reconcile(): Promise<void> {
    const rows = await this.store.sandboxesOnHost(this.host.id, [
      'creating',
      'running',
      'paused',
      'stopping',
    ]);
    const live = (r: SandboxRow) => r.state === 'running' || r.state === 'paused';
    const running = rows.filter(live);
    const lost = new Set(
      await this.host.reconcile(
        running.map((r) => ({
          id: r.id,
          memoryMb: r.memory_mb,
          env: JSON.parse(r.env) as Record<string, string>,
          network: parseNetwork(r.network),
          paused: r.state === 'paused',
        })),
        (await this.store.sandboxesOnHost(this.host.id, ['hibernated'])).map((r) => r.id),
      ),
    );
    for (const row of rows) {
      if (live(row) && !lost.has(row.id)) continue;
      const reason = live(row) ? 'lost' : `interrupted while ${row.state}`;
      await this.host.destroySandbox(row.id);
      await this.volumes.detach(row.id);
      await this.store.setState(row.id, 'stopped', reason, {
        stopped_at: new Date().toISOString(),
        stop_reason: reason,
      });
    }
  }
}
