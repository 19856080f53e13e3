/**
 * Creating sandboxes: validation against the template, the record, and one
 * create on the host. On failure nothing of the sandbox remains.
 */
import {
  WarrenError,
  newId,
  type CreateSandboxRequest,
  type ForkRequest,
  type HostApi,
  type HostVolumeAttachment,
  type Sandbox,
  type SandboxNetwork,
  type SandboxSource,
  type VolumeAttachment,
} from '@warren/protocol';
import { hashToken } from '../auth';
import type { Config } from '../config';
import { newPreviewToken } from '../preview/token';
import type { HostService } from '../hosts/service';
import type { QuotaService } from '../quotas/service';
import type { SandboxRecord, SnapshotRecord, Store } from '../store/store';
import type { VolumeService } from '../volume-service';
import { activityNow, isoIn } from './clock';
import type { SandboxLifecycle } from './lifecycle';

export interface LaunchOptions {
  template: string;
  source?: SandboxSource;
  cpu?: number;
  memoryMb?: number;
  diskMb?: number;
  volumes?: VolumeAttachment[];
  /** Host volumes owned by something else than the volumes API (a database's data volume). */
  hostVolumes?: HostVolumeAttachment[];
  /** An admin's placement hint (`host_id`). */
  hostId?: string;
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
  /** Stop every process the image brought along (a disk-only fork). */
  reset?: boolean;
  /** Preview URLs need a token; a fork child passes its parent's token hash. */
  preview?: { auth: boolean; tokenHash?: string | null };
  network: SandboxNetwork;
  /** Recorded as the cause of the change to running. */
  cause: string;
}

/**
 * What a fork child takes from its parent besides the image: sizing, env,
 * lineage and lifecycle settings; labels and TTL unless the request sets them.
 */
export function inherit(
  parent: SandboxRecord,
  req: ForkRequest,
): Omit<LaunchOptions, 'forkKind' | 'source' | 'cause'> {
  return {
    template: parent.template,
    cpu: parent.cpu,
    memoryMb: parent.memory_mb,
    env: parent.env,
    metadata: req.metadata ?? parent.metadata,
    ttlSeconds: req.ttl_seconds ?? parent.ttl_seconds,
    parentId: parent.id,
    parentLineage: parent.lineage,
    persistent: parent.persistent === 1,
    idleTimeoutSeconds: parent.idle_timeout_seconds,
    preview: { auth: parent.preview_auth === 1, tokenHash: parent.preview_token_hash },
    network: parent.network,
    // The parent's files must fit.
    diskMb: parent.disk_mb ?? undefined,
  };
}

export class SandboxCreator {
  /** Set by the platform: creates are admitted against the organisation's quotas. */
  quotas: QuotaService | null = null;
  /** Set by the platform: where new sandboxes go (one host without it). */
  hosts: HostService | null = null;

  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
    private readonly config: Config,
    private readonly volumes: VolumeService,
    private readonly lifecycle: SandboxLifecycle,
  ) {}

  async create(orgId: string, req: CreateSandboxRequest): Promise<Sandbox> {
    if (req.from_snapshot) return this.fromSnapshot(orgId, req, req.from_snapshot);
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
      hostId: req.host_id,
      cause: 'restored from template snapshot',
    });
  }

  private async fromSnapshot(orgId: string, req: CreateSandboxRequest, id: string) {
    const snap: SnapshotRecord | undefined = await this.store.getSnapshot(orgId, id);
    if (!snap) throw new WarrenError('SNAPSHOT_NOT_FOUND', `snapshot ${id} does not exist`);
    return this.launch(orgId, {
      network: {
        policy: req.network ?? snap.network.policy,
        secrets: req.secrets ?? snap.network.secrets,
      },
      template: snap.template,
      source: { kind: 'snapshot', snapshot_id: snap.id },
      cpu: req.cpu ?? snap.cpu,
      memoryMb: req.memory_mb ?? snap.memory_mb,
      // The captured files must fit: by default the disk of the sandbox it was taken from.
      diskMb: req.disk_mb ?? snap.disk_mb ?? undefined,
      volumes: req.volumes,
      env: { ...snap.env, ...req.env },
      metadata: req.metadata,
      ttlSeconds: req.ttl_seconds,
      persistent: req.persistent,
      idleTimeoutSeconds: req.idle_timeout_seconds,
      parentId: snap.sandbox_id,
      parentLineage: snap.lineage,
      forkKind: 'memory',
      snapshotId: snap.id,
      preview: { auth: req.preview_auth === true },
      hostId: req.host_id,
      cause: `restored from snapshot ${snap.id}`,
    });
  }

  /**
   * Records a new sandbox and has its host restore it, in one call that also
   * checks the template, sizes and network policy; on failure nothing of it
   * remains. Until the host answers, the record (state `creating`) holds the
   * requested sizes, 0 where the template's default will apply. `refusedBy`:
   * hosts that placement chose but that refused the sandbox
   * (INSUFFICIENT_CAPACITY: their last report was behind); placement then
   * tries the others, until none fits.
   */
  async launch(orgId: string, o: LaunchOptions, refusedBy: string[] = []): Promise<Sandbox> {
    const volumes = o.volumes ?? [];
    this.volumes.validate(volumes);
    const ttl = o.ttlSeconds ?? this.config.defaultTtlSeconds;
    const previewAuth = o.preview?.auth === true;
    const previewToken = previewAuth && !o.preview?.tokenHash ? newPreviewToken() : undefined;
    const clock = this.lifecycle.clock;
    const pinned = await this.pinned(orgId, o);
    // Placement and the insert of the record, one create at a time when there
    // are several hosts: each placement counts the sandboxes placed before it.
    const { placement, rec } = await this.oneAtATime(async () => {
      const placement = await this.hosts?.place({
        template: o.template,
        memoryMb: o.memoryMb ?? 0,
        pinned,
        refusedBy,
      });
      const rec: SandboxRecord = {
        id: newId('sandbox'),
        org_id: orgId,
        host_id: placement?.hostId ?? this.host.id,
        template: o.template,
        state: 'creating',
        cpu: o.cpu ?? 0,
        memory_mb: o.memoryMb ?? 0,
        metadata: o.metadata ?? {},
        env: o.env,
        ttl_seconds: ttl,
        created_at: isoIn(clock),
        ...activityNow(clock, ttl),
        stopped_at: null,
        stop_reason: null,
        parent_id: o.parentId ?? null,
        snapshot_id: o.snapshotId ?? null,
        lineage: o.parentId ? [...(o.parentLineage ?? []), o.parentId] : [],
        persistent: o.persistent ? 1 : 0,
        idle_timeout_seconds: o.idleTimeoutSeconds ?? this.config.defaultIdleTimeoutSeconds,
        fork_kind: o.forkKind ?? '',
        preview_auth: previewAuth ? 1 : 0,
        preview_token_hash: previewToken ? hashToken(previewToken) : (o.preview?.tokenHash ?? null),
        network: o.network,
        disk_mb: o.diskMb ?? null,
        volumes,
        image_id: null,
      };
      await this.admit(rec, o);
      return { placement, rec };
    });
    let refused = false;
    try {
      const attached = [
        ...(await this.volumes.attach(orgId, rec.id, volumes)),
        ...(o.hostVolumes ?? []),
      ];
      // The pressure ladder makes room on the control plane's own host; a joined agent admits alone.
      const admit = <T>(attempt: () => Promise<T>) =>
        rec.host_id === this.host.id ? this.lifecycle.admitting(rec.id, attempt) : attempt();
      const created = await admit(() =>
        this.host.sandboxes.create({
          id: rec.id,
          template: o.template,
          from: o.source,
          cpu: o.cpu,
          memory_mb: o.memoryMb,
          disk_mb: o.diskMb,
          volumes: attached,
          env: o.env,
          network: o.network,
          reset_processes: o.reset,
        }),
      );
      const { cpu, memory_mb, disk_mb } = created;
      await this.store.updateSandbox(rec.id, { cpu, memory_mb, disk_mb });
    } catch (err) {
      // Nothing half-created survives: the host agent has already undone its part.
      await this.volumes.detach(rec.id);
      await this.store.deleteSandboxRow(rec.id);
      // Placed (not pinned) on a host that cannot take it after all: another may.
      refused =
        !pinned && !!placement?.reason && (err as WarrenError).code === 'INSUFFICIENT_CAPACITY';
      if (!refused) throw err;
    } finally {
      this.quotas?.settled(rec.id);
    }
    if (refused) return this.launch(orgId, o, [...refusedBy, rec.host_id]);
    await this.store.setState(
      rec.id,
      'running',
      placement?.reason ? `${o.cause}; ${placement.reason}` : o.cause,
    );
    await this.lifecycle.touch(rec); // idle and TTL count from when it runs, not from the request
    const sandbox = await this.lifecycle.get(orgId, rec.id);
    return previewToken ? { ...sandbox, preview_token: previewToken } : sandbox;
  }

  /** Whether children of one image may go to any host: several hosts share the snapshot store. */
  spreads(): boolean {
    return (
      this.config.snapshotStore.kind === 's3' &&
      this.hosts !== null &&
      this.hosts.router.ids().length > 1
    );
  }

  private placing: Promise<unknown> = Promise.resolve();

  private oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.hosts || this.hosts.router.ids().length === 1) return fn();
    const next = this.placing.then(fn);
    this.placing = next.catch(() => undefined);
    return next;
  }

  /** The one host a sandbox must go to: where its volume, capture or (local) snapshot is. */
  private async pinned(
    orgId: string,
    o: LaunchOptions,
  ): Promise<{ hostId: string; why: string } | undefined> {
    const router = this.hosts?.router;
    if (!router) return undefined;
    if (o.hostId) return { hostId: o.hostId, why: 'asked for by an admin' };
    const vol = o.hostVolumes?.[0];
    if (vol)
      return { hostId: await router.volumeHost(vol.id), why: `its volume ${vol.id} is there` };
    if ((o.volumes ?? []).length > 0)
      return { hostId: router.local.id, why: 'volumes are on the local host' };
    if (o.source?.kind === 'capture')
      return { hostId: router.captureHost(o.source.capture_id), why: 'its parent is there' };
    if (o.source?.kind === 'snapshot' && this.config.snapshotStore.kind === 'local') {
      const snap = await this.store.getSnapshot(orgId, o.source.snapshot_id);
      if (snap) return { hostId: snap.host_id, why: "its snapshot is in that host's local store" };
    }
    return undefined;
  }

  /** Inserts the record, checked against the quotas first (atomically per organisation). */
  private async admit(rec: SandboxRecord, o: LaunchOptions): Promise<void> {
    const insert = () => this.store.insertSandbox(rec, 'create');
    if (!this.quotas) return insert();
    let memoryMb = o.memoryMb ?? 0;
    let diskMb = o.diskMb ?? 0;
    if (
      (o.memoryMb === undefined || o.diskMb === undefined) &&
      (await this.quotas.limitsSizes(rec.org_id))
    ) {
      const t = await this.host.templates.get(o.template);
      memoryMb = o.memoryMb ?? t?.default_memory_mb ?? 0;
      diskMb = o.diskMb ?? t?.default_disk_mb ?? 0;
    }
    const counted = !(o.metadata && 'warren.database' in o.metadata);
    await this.quotas.admitSandbox(rec.org_id, { id: rec.id, memoryMb, diskMb, counted }, insert);
  }
}
