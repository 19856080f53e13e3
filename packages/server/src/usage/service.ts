/**
 * Usage as the API shows it: a sandbox's samples over a range, and totals of
 * sandboxes over a range grouped by organisation, template or a label. Within
 * the sample retention period totals add up samples (to the sample interval);
 * before it, whole hours.
 */
import {
  WarrenError,
  type SandboxMetrics,
  type SandboxMetricsQuery,
  type UsageFigures,
  type UsageQuery,
  type UsageReport,
} from '@warren/protocol';
import type { Principal } from '../auth';
import { matchesSandbox } from '../keys/restriction';
import type { Store } from '../store/store';
import { hourOf, type SandboxFigures } from '../store/usage';
import { addFigures, emptyFigures, groupUsage, parseGroupBy, rounded } from './group';
import type { UsageSampler } from './sampler';

const HOUR_MS = 3600_000;

/** An ISO time from the query, or the default; INVALID_REQUEST for one that is no date. */
function time(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new WarrenError('INVALID_REQUEST', `${name} is not a date: ${value}`);
  return t;
}

function range(
  start: string | undefined,
  end: string | undefined,
  names: [string, string],
  defaultMs: number,
): [string, string] {
  const to = time(end, Date.now(), names[1]);
  const from = time(start, to - defaultMs, names[0]);
  if (from >= to)
    throw new WarrenError('INVALID_REQUEST', `${names[0]} must be before ${names[1]}`);
  return [new Date(from).toISOString(), new Date(to).toISOString()];
}

/** One sandbox's figures from two sources: sums add, the disk peak is the larger. */
function merge(a: UsageFigures, b: UsageFigures): UsageFigures {
  return {
    ...addFigures(a, b),
    disk_bytes_peak: Math.max(a.disk_bytes_peak, b.disk_bytes_peak),
  };
}

export class UsageService {
  constructor(
    private readonly store: Store,
    private readonly sampler: UsageSampler,
  ) {}

  private get queries() {
    return this.sampler.queries;
  }

  /** A sandbox's samples; SANDBOX_NOT_FOUND for another organisation's. */
  async series(p: Principal, id: string, q: SandboxMetricsQuery): Promise<SandboxMetrics> {
    const [since, until] = range(q.since, q.until, ['since', 'until'], HOUR_MS);
    const known = (await this.store.getSandbox(p.orgId, id)) ?? (await this.queries.sandbox(id));
    if (!known || known.org_id !== p.orgId)
      throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
    const rows = await this.queries.samples(id, since, until);
    let totals = emptyFigures();
    const samples = rows.map((r) => {
      totals = merge(totals, {
        cpu_seconds: r.cpu_seconds,
        memory_gb_seconds: r.memory_gb_seconds,
        sandbox_seconds: r.interval_seconds,
        disk_bytes_peak: r.disk_bytes ?? 0,
        net_rx_bytes: r.net_rx_bytes,
        net_tx_bytes: r.net_tx_bytes,
      });
      return {
        at: r.at,
        interval_seconds: r.interval_seconds,
        cpu_seconds: r.cpu_seconds,
        cpu_percent:
          r.interval_seconds > 0 ? Math.round((r.cpu_seconds / r.interval_seconds) * 1000) / 10 : 0,
        memory_bytes: r.memory_bytes,
        memory_gb_seconds: r.memory_gb_seconds,
        disk_bytes: r.disk_bytes,
        net_rx_bytes: r.net_rx_bytes,
        net_tx_bytes: r.net_tx_bytes,
      };
    });
    return {
      sandbox_id: id,
      since,
      until,
      sample_interval_ms: this.sampler.intervalMs,
      samples,
      totals: rounded(totals),
    };
  }

  /** Which organisation a report covers: null for all (the install's admin only). */
  private scope(p: Principal, orgId: string | undefined): string | null {
    if (p.installAdmin) return orgId ?? null;
    if (orgId !== undefined && orgId !== p.orgId)
      throw new WarrenError('ORGANISATION_NOT_FOUND', `organisation ${orgId} does not exist`);
    return p.orgId;
  }

  async report(p: Principal, q: UsageQuery): Promise<UsageReport> {
    const [from, to] = range(q.from, q.to, ['from', 'to'], 24 * HOUR_MS);
    const orgId = this.scope(p, q.org_id);
    // Samples are complete from this hour on; before it only the hours are left.
    const kept = Date.now() - this.sampler.retentionSeconds * 1000 + HOUR_MS - 1;
    const boundary = hourOf(new Date(kept).toISOString());
    const perSandbox = new Map<string, UsageFigures>();
    const add = (rows: SandboxFigures[]) => {
      for (const { sandbox_id, ...figures } of rows)
        perSandbox.set(sandbox_id, merge(perSandbox.get(sandbox_id) ?? emptyFigures(), figures));
    };
    if (from < boundary)
      add(await this.queries.hourFigures(hourOf(from), to < boundary ? to : boundary, orgId));
    if (to > boundary)
      add(await this.queries.sampleFigures(from > boundary ? from : boundary, to, orgId));
    const known = await this.queries.sandboxes([...perSandbox.keys()]);
    const sandboxes = known
      .map((u) => ({
        sandbox_id: u.sandbox_id,
        org_id: u.org_id,
        template: u.template,
        labels: JSON.parse(u.labels) as Record<string, string>,
        ...perSandbox.get(u.sandbox_id)!,
      }))
      .filter((s) => matchesSandbox(p.restriction, { id: s.sandbox_id, metadata: s.labels }));
    const totals = sandboxes.reduce<UsageFigures>((t, s) => addFigures(t, s), emptyFigures());
    return {
      from,
      to,
      group_by: q.group_by,
      groups: groupUsage(sandboxes, parseGroupBy(q.group_by)),
      totals: rounded(totals),
    };
  }
}
