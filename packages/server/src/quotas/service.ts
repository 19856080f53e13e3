/**
 * Quotas per organisation: live sandboxes, their memory and disk (with
 * volumes and databases), databases, snapshot storage, and a token bucket of
 * sandbox creates. Limits are the install's defaults (WARREN_QUOTA_*) with the
 * organisation's overrides on top. A create checks and records itself under
 * one lock per organisation (in this process, and on PostgreSQL an advisory
 * lock that other control planes on the database honour too), so concurrent
 * creates never overshoot; over a quota it is QUOTA_EXCEEDED (429,
 * Retry-After) and nothing is made.
 */
import {
  WarrenError,
  type OrganisationQuotas,
  type QuotaLimits,
  type QuotaName,
  type QuotaOverrides,
  type QuotaUsage,
} from '@warren/protocol';
import { KeyedLock } from '../databases/locks';
import type { Store } from '../store/store';
import { CreateBuckets, type BucketLimits } from './bucket';
import { QuotaQueries } from './queries';

/** Retry-After of a capacity quota: a hint to look again soon (something may have stopped). */
const CAPACITY_RETRY_SECONDS = 5;

export interface QuotaExceeded {
  orgId: string;
  quota: QuotaName;
  limit: number;
  current: number;
}

/** What a new sandbox will hold: its sizes, or its template's defaults. */
export interface SandboxNeed {
  id: string;
  memoryMb: number;
  diskMb: number;
  /** False for a database's server: the databases quota counts those. */
  counted: boolean;
}

const UNITS: Record<QuotaName, string> = {
  sandboxes: 'live sandboxes',
  memory_mb: 'MiB of memory',
  disk_mb: 'MiB of disk',
  databases: 'databases',
  snapshot_bytes: 'bytes of snapshots',
  creates: 'sandbox creates in a burst',
};

export class QuotaService {
  readonly queries: QuotaQueries;
  private readonly orgLock = new KeyedLock();
  private readonly buckets = new CreateBuckets();
  /** Sizes of sandboxes being created whose record still holds 0 (the template's default). */
  private readonly pending = new Map<string, SandboxNeed>();
  /** Called for every refusal (webhooks of "quota exceeded" events hang here). */
  onQuotaExceeded: ((e: QuotaExceeded) => void) | null = null;

  constructor(
    private readonly store: Store,
    private readonly defaults: QuotaLimits,
  ) {
    this.queries = new QuotaQueries(store.db);
  }

  /** One admission per organisation at a time, across every control plane on the store. */
  private locked(orgId: string, fn: () => Promise<void>): Promise<void> {
    return this.orgLock.run(orgId, () => this.store.exclusive(`quota:${orgId}`, fn));
  }

  async limits(orgId: string): Promise<QuotaLimits> {
    return { ...this.defaults, ...(await this.queries.overrides(orgId)) };
  }

  async setOverrides(orgId: string, overrides: QuotaOverrides): Promise<void> {
    await this.queries.setOverrides(orgId, overrides);
  }

  async view(orgId: string): Promise<OrganisationQuotas> {
    const overrides = await this.queries.overrides(orgId);
    const limits = { ...this.defaults, ...overrides };
    return { org_id: orgId, limits, overrides, usage: await this.usage(orgId, limits) };
  }

  async usage(orgId: string, limits?: QuotaLimits): Promise<QuotaUsage> {
    const [live, volumeMb, dbs, snapshotBytes] = await Promise.all([
      this.queries.liveSandboxes(orgId),
      this.queries.volumeMb(orgId),
      this.queries.databases(orgId),
      this.queries.snapshotBytes(orgId),
    ]);
    let memory = 0;
    let disk = volumeMb + dbs.diskMb;
    for (const s of live) {
      memory += s.memory_mb || (this.pending.get(s.id)?.memoryMb ?? 0);
      disk += s.disk_mb ?? this.pending.get(s.id)?.diskMb ?? 0;
    }
    const bucket = bucketOf(limits ?? (await this.limits(orgId)));
    return {
      sandboxes: live.filter((s) => !s.database).length,
      memory_mb: memory,
      disk_mb: disk,
      databases: dbs.count,
      snapshot_bytes: snapshotBytes,
      creates_available: bucket
        ? Math.floor(this.buckets.available(orgId, bucket) * 100) / 100
        : null,
    };
  }

  /** Whether the organisation has a limit on memory or disk (creates then need their template's sizes). */
  async limitsSizes(orgId: string): Promise<boolean> {
    const l = await this.limits(orgId);
    return l.memory_mb !== null || l.disk_mb !== null;
  }

  /**
   * Checks a new sandbox against the quotas and runs `insert` (its record)
   * under the organisation's lock; call `settled(id)` once its create is over.
   */
  async admitSandbox(orgId: string, need: SandboxNeed, insert: () => Promise<void>): Promise<void> {
    await this.locked(orgId, async () => {
      const limits = await this.limits(orgId);
      // Use is counted only against a limit that is set: unlimited organisations skip the queries.
      if (
        (need.counted && limits.sandboxes !== null) ||
        limits.memory_mb !== null ||
        limits.disk_mb !== null
      ) {
        const use = await this.usage(orgId, limits);
        if (need.counted) this.over(orgId, 'sandboxes', limits.sandboxes, use.sandboxes, 1);
        this.over(orgId, 'memory_mb', limits.memory_mb, use.memory_mb, need.memoryMb);
        this.over(orgId, 'disk_mb', limits.disk_mb, use.disk_mb, need.diskMb);
      }
      const bucket = bucketOf(limits);
      if (bucket) {
        const wait = this.buckets.waitSeconds(orgId, bucket);
        if (wait > 0) this.refuse(orgId, 'creates', bucket.burst, bucket.burst, wait);
      }
      await insert();
      if (bucket) this.buckets.take(orgId, bucket);
      this.pending.set(need.id, need);
    });
  }

  settled(id: string): void {
    this.pending.delete(id);
  }

  /** A new database of `diskMb`: the databases and disk quotas, then `insert` under the lock. */
  async admitDatabase(orgId: string, diskMb: number, insert: () => Promise<void>): Promise<void> {
    await this.locked(orgId, async () => {
      const limits = await this.limits(orgId);
      if (limits.databases !== null || limits.disk_mb !== null) {
        const use = await this.usage(orgId, limits);
        this.over(orgId, 'databases', limits.databases, use.databases, 1);
        this.over(orgId, 'disk_mb', limits.disk_mb, use.disk_mb, diskMb);
      }
      await insert();
    });
  }

  /** A new volume of `sizeMb` against the disk quota, then `insert` under the lock. */
  async admitVolume(orgId: string, sizeMb: number, insert: () => Promise<void>): Promise<void> {
    await this.locked(orgId, async () => {
      const limits = await this.limits(orgId);
      if (limits.disk_mb !== null) {
        const use = await this.usage(orgId, limits);
        this.over(orgId, 'disk_mb', limits.disk_mb, use.disk_mb, sizeMb);
      }
      await insert();
    });
  }

  /** A snapshot's size is known only once taken: it is refused once the stored total reaches the limit. */
  async checkSnapshot(orgId: string): Promise<void> {
    const limits = await this.limits(orgId);
    if (limits.snapshot_bytes === null) return;
    const bytes = await this.queries.snapshotBytes(orgId);
    this.over(orgId, 'snapshot_bytes', limits.snapshot_bytes, bytes, 1);
  }

  /** Throws QUOTA_EXCEEDED when `current + adding` is over `limit`. */
  private over(
    orgId: string,
    quota: QuotaName,
    limit: number | null,
    current: number,
    adding: number,
  ) {
    if (limit === null || current + adding <= limit) return;
    this.refuse(orgId, quota, limit, current, CAPACITY_RETRY_SECONDS);
  }

  private refuse(
    orgId: string,
    quota: QuotaName,
    limit: number,
    current: number,
    retry: number,
  ): never {
    this.onQuotaExceeded?.({ orgId, quota, limit, current });
    const what =
      quota === 'creates'
        ? `the create rate of organisation ${orgId} is used up (${limit} ${UNITS[quota]}): try again in ${retry} s`
        : `quota ${quota} of organisation ${orgId} exceeded: ${current} of ${limit} ${UNITS[quota]} in use`;
    throw new WarrenError('QUOTA_EXCEEDED', what, {
      quota,
      limit,
      current,
      retry_after_seconds: retry,
    });
  }
}

/** The create bucket: set by creates_per_second; its burst is at least one second's worth by default. */
function bucketOf(l: QuotaLimits): BucketLimits | null {
  if (l.creates_per_second === null || l.creates_per_second <= 0) return null;
  return {
    burst: l.creates_burst ?? Math.max(1, Math.ceil(l.creates_per_second)),
    perSecond: l.creates_per_second,
  };
}
