/**
 * The lifecycle of sandbox records: one change at a time per sandbox (a
 * lock), the state machine of pause, resume, hibernate and wake, activity
 * for TTL and idle, and destroy. Host work goes through HostApi.
 */
import {
  newId,
  WarrenError,
  type HostApi,
  type HostSandboxApi,
  type PreviewToken,
  type Sandbox,
  type UpdateSandboxRequest,
} from '@warren/protocol';
import { hashToken } from '../auth';
import type { Config } from '../config';
import { newPreviewToken, previewUrl } from '../preview/token';
import type { SandboxRecord, Store } from '../store/store';
import type { VolumeService } from '../volume-service';
import { activityNow, isoIn, type Clock } from './clock';
import type { MemoryPressure } from './pressure';
import { sandboxView } from './view';

/** pause, resume, hibernate, wake: each allowed only from the states listed here. */
const TRANSITIONS = {
  pause: { from: ['running'], to: 'paused' },
  resume: { from: ['paused'], to: 'running' },
  hibernate: { from: ['running', 'paused'], to: 'hibernated' },
  wake: { from: ['hibernated'], to: 'running' },
} as const;

export type Transition = keyof typeof TRANSITIONS;

/**
 * Whether a sandbox can go to another host as an image (a drain, a lost
 * host): persistent, without named volumes (they stay on their host), not a
 * database's server (its database moves by its archive).
 */
export const movesBetweenHosts = (row: SandboxRecord) =>
  row.persistent === 1 && row.volumes.length === 0 && !('warren.database' in row.metadata);

export class SandboxLifecycle {
  /** One lifecycle change at a time per sandbox: concurrent requests wait for it. */
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Requests open on each sandbox (exec streams, transfers): a sandbox with any is not idle. */
  private readonly operations = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
    private readonly config: Config,
    private readonly volumes: VolumeService,
    readonly clock: Clock,
  ) {}

  async row(orgId: string, id: string): Promise<SandboxRecord> {
    const row = await this.store.getSandbox(orgId, id);
    if (!row) throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
    return row;
  }

  /** Any organisation's sandbox: preview URLs name a sandbox by id alone. */
  async anyOrganisation(id: string): Promise<SandboxRecord> {
    const row = await this.store.getSandboxById(id);
    if (!row) throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
    return row;
  }

  async get(orgId: string, id: string): Promise<Sandbox> {
    return sandboxView(await this.row(orgId, id), this.config.previewUrl);
  }

  async list(q: Parameters<Store['listSandboxes']>[0]) {
    const { rows, nextCursor } = await this.store.listSandboxes(q);
    return {
      items: rows.map((r) => sandboxView(r, this.config.previewUrl)),
      next_cursor: nextCursor,
    };
  }

  async events(orgId: string, id: string) {
    await this.row(orgId, id);
    return this.store.sandboxEvents(id);
  }

  async locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    this.locks.set(id, next);
    try {
      return await next;
    } finally {
      if (this.locks.get(id) === next) this.locks.delete(id);
    }
  }

  /**
   * Resolves a running sandbox for an operation on it and counts that as
   * activity (TTL). A paused or hibernated sandbox is brought back first; the
   * caller sees only latency. Under the sandbox's lock, so that a hibernate in
   * progress finishes first.
   */
  async use(orgId: string, id: string): Promise<SandboxRecord> {
    return this.locked(id, async () => {
      let row = await this.row(orgId, id);
      if (row.state === 'paused' || row.state === 'hibernated') {
        await this.change(row, row.state === 'paused' ? 'resume' : 'wake', 'implicit, on use');
        row = await this.row(orgId, id);
      }
      if (row.state !== 'running')
        throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is ${row.state}`);
      await this.touch(row);
      return row;
    });
  }

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

  /** The memory pressure ladder (pressure.ts), set once the platform has made it. */
  pressure: MemoryPressure | null = null;

  /** A host create or wake of `id`, through the pressure ladder when there is one. */
  admitting<T>(id: string, attempt: () => Promise<T>): Promise<T> {
    return this.pressure ? this.pressure.admitting(id, attempt) : attempt();
  }

  hasOperations(id: string): boolean {
    return this.operations.has(id);
  }

  async transition(
    row: SandboxRecord,
    action: Transition,
    cause: string,
    /** Checked under the lock, on the current record: false leaves the sandbox as it is. */
    still: (current: SandboxRecord) => boolean = () => true,
  ): Promise<Sandbox> {
    return this.locked(row.id, async () => {
      const current = await this.row(row.org_id, row.id);
      if (still(current)) await this.change(current, action, cause);
      return this.get(row.org_id, row.id);
    });
  }

  /**
   * Hibernates the sandbox unless it was used since `row` was read (its
   * activity moved on, or a request is open on it): what the idle sweeps and
   * the memory pressure ladder do to sandboxes they found idle.
   */
  hibernateUnused(row: SandboxRecord, cause: string): Promise<Sandbox> {
    return this.transition(
      row,
      'hibernate',
      cause,
      (current) => current.last_activity_at === row.last_activity_at && !this.hasOperations(row.id),
    );
  }

  /** Makes one lifecycle change; the caller holds the sandbox's lock. */
  private async change(current: SandboxRecord, action: Transition, cause: string): Promise<void> {
    const rule = TRANSITIONS[action];
    if (!(rule.from as readonly string[]).includes(current.state)) {
      throw new WarrenError(
        'INVALID_STATE',
        `cannot ${action} sandbox ${current.id}: it is ${current.state} (needs ${rule.from.join(' or ')})`,
      );
    }
    const sandboxes = this.host.sandboxes;
    if (action === 'pause') await sandboxes.pause(current.id);
    else if (action === 'resume') await sandboxes.resume(current.id);
    else if (action === 'hibernate') await this.hibernateOn(sandboxes, current);
    else {
      await this.admitting(current.id, () =>
        sandboxes.wake(current.id, { env: current.env, network: current.network }),
      );
      await this.dropImage(current);
    }
    await this.store.setState(current.id, rule.to, `${action} (${cause})`);
  }

  /**
   * Hibernates a sandbox on `host` (its own, or the one a drain moved it to).
   * A persistent sandbox's image also goes into the snapshot store when that
   * is shared (S3), so that another host can restore it if this one is lost.
   */
  async hibernateOn(host: HostSandboxApi, row: SandboxRecord): Promise<void> {
    await this.dropImage(row);
    const share = this.config.snapshotStore.kind === 's3' && movesBetweenHosts(row);
    const imageId = share ? newId('snapshot') : undefined;
    const { shared } = await host.hibernate(row.id, imageId ? { image_id: imageId } : {});
    if (imageId && shared) await this.store.updateSandbox(row.id, { image_id: imageId });
  }

  /** Forgets a hibernation image kept in the snapshot store (woken, moved or stopped). */
  async dropImage(row: Pick<SandboxRecord, 'id' | 'image_id'>): Promise<void> {
    if (!row.image_id) return;
    await this.store.updateSandbox(row.id, { image_id: null });
    await this.host.snapshots.delete(row.image_id).catch(() => undefined);
  }

  private async dropImageOf(id: string): Promise<void> {
    const row = await this.store.getSandboxById(id);
    if (row) await this.dropImage(row);
  }

  /** Counts the end of a long operation (an exec that ran for minutes) as activity too. */
  async activity(orgId: string, id: string): Promise<void> {
    const row = await this.store.getSandbox(orgId, id);
    if (row?.state === 'running') await this.touch(row);
  }

  async touch(row: Pick<SandboxRecord, 'id' | 'ttl_seconds'>): Promise<void> {
    await this.store.updateSandbox(row.id, activityNow(this.clock, row.ttl_seconds));
  }

  async update(orgId: string, id: string, patch: UpdateSandboxRequest): Promise<Sandbox> {
    const row = await this.row(orgId, id);
    if (row.state === 'stopped')
      throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is stopped`);
    const ttl = patch.ttl_seconds ?? row.ttl_seconds;
    await this.store.updateSandbox(id, {
      ...(patch.metadata ? { metadata: patch.metadata } : {}),
      ttl_seconds: ttl,
      ...(patch.persistent !== undefined ? { persistent: patch.persistent ? 1 : 0 } : {}),
      ...(patch.idle_timeout_seconds !== undefined
        ? { idle_timeout_seconds: patch.idle_timeout_seconds }
        : {}),
      ...activityNow(this.clock, ttl),
    });
    return this.get(orgId, id);
  }

  /** A new preview token for a sandbox created with preview_auth: the old one stops working. */
  async rotatePreviewToken(orgId: string, id: string): Promise<PreviewToken> {
    const row = await this.row(orgId, id);
    if (row.state === 'stopped')
      throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${row.id} is stopped`);
    if (row.preview_auth !== 1)
      throw new WarrenError(
        'INVALID_STATE',
        `sandbox ${row.id} was created without preview_auth: its preview URLs need no token`,
      );
    const token = newPreviewToken();
    await this.store.updateSandbox(row.id, { preview_token_hash: hashToken(token) });
    return {
      sandbox_id: row.id,
      preview_token: token,
      preview_url: previewUrl(this.config.previewUrl, row.id),
    };
  }

  /** Destroys a sandbox; an already stopped one is left as it is (`deleted: false`). */
  async destroy(orgId: string, id: string, reason = 'deleted'): Promise<boolean> {
    return this.locked(id, async () => {
      const row = await this.row(orgId, id);
      if (row.state === 'stopped') return false;
      await this.store.setState(row.id, 'stopping', reason);
      await this.stopped(row.id, reason);
      return true;
    });
  }

  /**
   * Records stopped a sandbox whose host was lost: nothing is asked of the
   * host (it cannot answer; fenced, it destroys the sandbox itself).
   */
  async lost(id: string, reason: string): Promise<void> {
    await this.dropImageOf(id);
    await this.volumes.detach(id);
    await this.store.setState(id, 'stopped', reason, {
      stopped_at: isoIn(this.clock),
      stop_reason: reason,
    });
  }

  /** Removes a sandbox from its host and records it stopped. */
  async stopped(id: string, reason: string): Promise<void> {
    await this.host.sandboxes.destroy(id);
    await this.dropImageOf(id);
    await this.volumes.detach(id);
    await this.store.setState(id, 'stopped', reason, {
      stopped_at: isoIn(this.clock),
      stop_reason: reason,
    });
  }
}
