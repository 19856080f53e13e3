/**
 * Named persistent volumes: records and quotas here, images and mounts in the
 * host agent (HostVolumes). A volume is attached when a sandbox is created
 * and stays attached until that sandbox stops, through pause and hibernation.
 */
import { posix } from 'node:path';
import {
  WarrenError,
  newId,
  type CreateVolumeRequest,
  type HostApi,
  type HostVolumeAttachment,
  type Volume,
  type VolumeAttachment,
} from '@warren/protocol';
import type { Config } from './config';
import type { QuotaService } from './quotas/service';
import type { Store } from './store/store';
import { VolumeQueries, type VolumeRow } from './store/volumes';

/** Mount paths that belong to Warren or to the kernel, and everything below them. */
const RESERVED_TREES = ['/opt/warren', '/run/warren', '/proc', '/sys', '/dev'];
/** Mount points of their own that a volume cannot replace. */
const RESERVED_PATHS = ['/', '/tmp', '/run', '/opt'];

export function checkMountPath(path: string): void {
  const bad = (why: string) =>
    new WarrenError('INVALID_MOUNT_PATH', `mount path ${JSON.stringify(path)} ${why}`);
  if (!path.startsWith('/')) throw bad('is not absolute');
  if (path.includes('\0')) throw bad('contains a NUL byte');
  if (posix.normalize(path) !== path || (path.length > 1 && path.endsWith('/')))
    throw bad(`is not in normal form (${posix.normalize(path).replace(/(.)\/$/, '$1')})`);
  if (RESERVED_PATHS.includes(path)) throw bad('is reserved');
  for (const tree of RESERVED_TREES)
    if (path === tree || path.startsWith(`${tree}/`)) throw bad(`is under ${tree}`);
}

export class VolumeService {
  readonly queries: VolumeQueries;
  /** Set by the platform: new volumes count against the organisation's disk quota. */
  quotas: QuotaService | null = null;

  constructor(
    store: Store,
    private readonly host: HostApi,
    private readonly config: Config,
  ) {
    this.queries = new VolumeQueries(store.db);
  }

  async toApi(row: VolumeRow): Promise<Volume> {
    const attachments = await this.queries.attachments(row.id);
    return {
      id: row.id,
      org_id: row.org_id,
      name: row.name,
      size_mb: row.size_mb,
      used_bytes: await this.host.volumes.usedBytes(row.id),
      attachments: attachments.map((a) => ({
        sandbox_id: a.sandbox_id,
        mount_path: a.mount_path,
        read_only: a.read_only === 1,
      })),
      created_at: row.created_at,
    };
  }

  async create(orgId: string, req: CreateVolumeRequest): Promise<Volume> {
    if (req.size_mb > this.config.volumeMaxMb)
      throw new WarrenError(
        'VOLUME_QUOTA_EXCEEDED',
        `size_mb ${req.size_mb} is over the limit of ${this.config.volumeMaxMb} MiB per volume`,
        { max_size_mb: this.config.volumeMaxMb },
      );
    const row: VolumeRow = {
      id: newId('volume'),
      org_id: orgId,
      name: req.name,
      host_id: this.host.id,
      size_mb: req.size_mb,
      created_at: new Date().toISOString(),
    };
    const insert = () => this.queries.insert(row);
    await (this.quotas ? this.quotas.admitVolume(orgId, row.size_mb, insert) : insert());
    try {
      await this.host.volumes.create(row.id, row.size_mb);
    } catch (err) {
      await this.queries.deleteUnattached(row).catch(() => undefined);
      throw err;
    }
    return this.toApi(row);
  }

  async row(orgId: string, name: string): Promise<VolumeRow> {
    const row = await this.queries.get(orgId, name);
    if (!row) throw new WarrenError('VOLUME_NOT_FOUND', `volume ${name} does not exist`);
    return row;
  }

  async list(orgId: string): Promise<Volume[]> {
    return Promise.all((await this.queries.list(orgId)).map((r) => this.toApi(r)));
  }

  /** Deletes a volume and its data; refused while a sandbox holds it (VOLUME_IN_USE). */
  async delete(orgId: string, name: string): Promise<string> {
    const row = await this.row(orgId, name);
    await this.queries.deleteUnattached(row);
    await this.host.volumes.remove(row.id);
    return row.id;
  }

  /** Checks a create's attach list before anything is recorded. */
  validate(reqs: VolumeAttachment[]): void {
    if (reqs.length > this.config.volumesPerSandbox)
      throw new WarrenError(
        'VOLUME_QUOTA_EXCEEDED',
        `${reqs.length} volumes requested; at most ${this.config.volumesPerSandbox} per sandbox`,
        { max_volumes_per_sandbox: this.config.volumesPerSandbox },
      );
    const names = new Set<string>();
    const paths: string[] = [];
    for (const r of reqs) {
      checkMountPath(r.mount_path);
      if (names.has(r.name))
        throw new WarrenError('INVALID_REQUEST', `volume ${r.name} is listed twice`);
      names.add(r.name);
      for (const p of paths) {
        if (
          p === r.mount_path ||
          p.startsWith(`${r.mount_path}/`) ||
          r.mount_path.startsWith(`${p}/`)
        )
          throw new WarrenError(
            'INVALID_MOUNT_PATH',
            `mount paths ${p} and ${r.mount_path} overlap`,
          );
      }
      paths.push(r.mount_path);
    }
  }

  /** Records the attachments (all or none) and returns what the host binds. */
  async attach(
    orgId: string,
    sandboxId: string,
    reqs: VolumeAttachment[],
  ): Promise<HostVolumeAttachment[]> {
    if (reqs.length === 0) return [];
    const rows = await this.queries.attach(orgId, sandboxId, reqs);
    return reqs.map((r, i) => ({ ...r, id: rows[i]!.id }));
  }

  async detach(sandboxId: string): Promise<void> {
    await this.queries.detachAll(sandboxId);
  }

  /**
   * At start: mounts the volumes of this host that are not mounted (after a
   * reboot). One that cannot be mounted (its image was removed by hand) does
   * not stop the platform: it is reported, and attaching it fails later.
   */
  async mountAll(report: (line: string) => void): Promise<void> {
    for (const v of await this.queries.all()) {
      if (v.host_id !== this.host.id) continue;
      await this.host.volumes
        .mount(v.id)
        .catch((err: Error) => report(`cannot mount volume ${v.name} (${v.id}): ${err.message}`));
    }
  }
}
