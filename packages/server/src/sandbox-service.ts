/**
 * Control-plane logic of sandboxes: validation against templates, records
 * and state changes in the store, placement on the host agent, TTL.
 */
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  WarrenError,
  newId,
  type CreateSandboxRequest,
  type ForkTreeRequest,
  type Sandbox,
  type SandboxState,
  type Snapshot,
  type VolumeAttachment,
} from '@warren/protocol';
import type { GuestChannel, HostAgent, SandboxSpec } from '@warren/host-agent';
import type { Config } from './config';
import type { SandboxRow, SnapshotRow, Store } from './store/store';
import type { VolumeService } from './volume-service';

export function toApi(row: SandboxRow): Sandbox {
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
  };
}

/** The API view of a snapshot: its host and the parent's env stay internal. */
export function snapshotToApi(row: SnapshotRow): Snapshot {
  const { host_id, env, ...api } = row;
  return api;
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name))).size;
  }
  return total;
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
  parentId?: string;
  snapshotId?: string;
  from?: { imageDir: string; spec: SandboxSpec };
  /** Recorded as the cause of the change to running. */
  cause: string;
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
      return this.launch(orgId, {
        template: snap.template,
        cpu: req.cpu ?? snap.cpu,
        memoryMb: req.memory_mb ?? snap.memory_mb,
        // The captured files must fit: by default the disk of the sandbox it was taken from.
        diskMb: req.disk_mb ?? (await this.snapshotDiskMb(snap.id)),
        volumes: req.volumes,
        env: { ...(JSON.parse(snap.env) as Record<string, string>), ...req.env },
        metadata: req.metadata,
        ttlSeconds: req.ttl_seconds,
        parentId: snap.sandbox_id,
        snapshotId: snap.id,
        from: await this.snapshotSource(snap.id),
        cause: `restored from snapshot ${snap.id}`,
      });
    }
    return this.launch(orgId, {
      template: req.template,
      cpu: req.cpu,
      memoryMb: req.memory_mb,
      diskMb: req.disk_mb,
      volumes: req.volumes,
      env: req.env ?? {},
      metadata: req.metadata,
      ttlSeconds: req.ttl_seconds,
      cause: 'restored from template snapshot',
    });
  }

  /** Records a new sandbox and has the host restore it; on failure nothing of it remains. */
  private async launch(orgId: string, o: LaunchOptions): Promise<Sandbox> {
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
      });
    } catch (err) {
      // Nothing half-created survives: the host agent has already undone its part.
      await this.volumes.detach(row.id);
      await this.store.deleteSandboxRow(row.id);
      throw err;
    }
    await this.store.setState(row.id, 'running', o.cause);
    return this.get(orgId, row.id);
  }

  // ---- snapshots and forks ----

  private snapshotDir(id: string): string {
    return join(this.config.home, 'snapshots', id);
  }

  private async snapshotSource(id: string): Promise<{ imageDir: string; spec: SandboxSpec }> {
    const dir = this.snapshotDir(id);
    const spec = JSON.parse(await readFile(join(dir, 'spec.json'), 'utf8')) as SandboxSpec;
    return { imageDir: join(dir, 'image'), spec };
  }

  private async snapshotDiskMb(id: string): Promise<number | undefined> {
    try {
      const { disk_mb } = JSON.parse(
        await readFile(join(this.snapshotDir(id), 'disk.json'), 'utf8'),
      ) as { disk_mb: number | null };
      return disk_mb ?? undefined;
    } catch {
      return undefined;
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
    const dir = this.snapshotDir(snapId);
    return this.locked(id, async () => {
      try {
        const { spec, pausedMs } = await this.host.capture(id, join(dir, 'image'));
        await writeFile(join(dir, 'spec.json'), JSON.stringify(spec));
        await writeFile(join(dir, 'disk.json'), JSON.stringify({ disk_mb: row.disk_mb }));
        const snap: SnapshotRow = {
          id: snapId,
          org_id: orgId,
          host_id: this.host.id,
          sandbox_id: id,
          template: row.template,
          cpu: row.cpu,
          memory_mb: row.memory_mb,
          env: row.env,
          size_bytes: await dirBytes(dir),
          parent_pause_ms: Math.round(pausedMs),
          created_at: new Date().toISOString(),
        };
        await this.store.insertSnapshot(snap);
        return snapshotToApi(snap);
      } catch (err) {
        await rm(dir, { recursive: true, force: true });
        throw err;
      }
    });
  }

  async deleteSnapshot(orgId: string, id: string): Promise<void> {
    await this.snapshotRow(orgId, id);
    await this.store.deleteSnapshot(id);
    // Restored sandboxes hold no reference to the image: it is read whole at restore.
    await rm(this.snapshotDir(id), { recursive: true, force: true });
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
    const dir = join(this.config.home, 'snapshots', `.fork-${newId('snapshot')}`);
    try {
      const { spec, pausedMs } = await this.locked(id, () =>
        this.host.capture(id, join(dir, 'image')),
      );
      const launched = await Promise.allSettled(
        Array.from({ length: req.count }, () =>
          this.launch(orgId, {
            template: parent.template,
            cpu: parent.cpu,
            memoryMb: parent.memory_mb,
            diskMb: parent.disk_mb ?? undefined,
            env: JSON.parse(parent.env) as Record<string, string>,
            metadata: req.metadata ?? (JSON.parse(parent.metadata) as Record<string, string>),
            ttlSeconds: req.ttl_seconds ?? parent.ttl_seconds,
            parentId: id,
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

  async row(orgId: string, id: string): Promise<SandboxRow> {
    const row = await this.store.getSandbox(orgId, id);
    if (!row) throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
    return row;
  }

  async get(orgId: string, id: string): Promise<Sandbox> {
    return toApi(await this.row(orgId, id));
  }

  /** Resolves a running sandbox for an operation on it and counts that as activity (TTL). */
  async use(orgId: string, id: string): Promise<GuestChannel> {
    let row = await this.row(orgId, id);
    // A paused or hibernated sandbox is brought back first; the caller sees only latency.
    if (row.state === 'paused' || row.state === 'hibernated') {
      await this.transition(
        row,
        row.state === 'paused' ? 'resume' : 'wake',
        'implicit, on use',
        true,
      );
      row = await this.row(orgId, id);
    }
    if (row.state !== 'running')
      throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is ${row.state}`);
    await this.touch(row);
    return this.host.channel(id);
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
    /** Implicit transitions are satisfied when a concurrent request already made them. */
    implicit = false,
  ): Promise<Sandbox> {
    const rule = SandboxService.TRANSITIONS[action];
    return this.locked(row.id, async () => {
      const current = await this.row(row.org_id, row.id);
      if (!(implicit && current.state === rule.to)) {
        if (!(rule.from as readonly string[]).includes(current.state)) {
          throw new WarrenError(
            'INVALID_STATE',
            `cannot ${action} sandbox ${row.id}: it is ${current.state} (needs ${rule.from.join(' or ')})`,
          );
        }
        if (action === 'pause') await this.host.pause(row.id);
        else if (action === 'resume') await this.host.resume(row.id);
        else if (action === 'hibernate') await this.host.hibernate(row.id);
        else await this.host.wake(row.id, JSON.parse(current.env) as Record<string, string>);
        await this.store.setState(row.id, rule.to, `${action} (${cause})`);
      }
      return this.get(row.org_id, row.id);
    });
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
    patch: { metadata?: Record<string, string>; ttl_seconds?: number },
  ): Promise<Sandbox> {
    const row = await this.row(orgId, id);
    if (row.state === 'stopped')
      throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is stopped`);
    const now = new Date();
    const ttl = patch.ttl_seconds ?? row.ttl_seconds;
    await this.store.updateSandbox(id, {
      ...(patch.metadata ? { metadata: JSON.stringify(patch.metadata) } : {}),
      ttl_seconds: ttl,
      last_activity_at: now.toISOString(),
      expires_at: later(now, ttl),
    });
    return this.get(orgId, id);
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

  /** Destroys running sandboxes whose TTL has passed; returns their ids. */
  async reapExpired(): Promise<string[]> {
    const expired = await this.store.expiredSandboxes(new Date().toISOString());
    for (const row of expired) await this.destroy(row.org_id, row.id, 'ttl_expired');
    return expired.map((r) => r.id);
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
          paused: r.state === 'paused',
        })),
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
