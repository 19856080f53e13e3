/** Usage: totals over a range grouped (`getUsage`), and a sandbox's samples (`sandbox.metrics()`). */
import type { SandboxMetrics, UsageReport } from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

/** A time as a Date or an ISO 8601 string. */
export type TimeInput = Date | string;

const iso = (t: TimeInput | undefined) => (t instanceof Date ? t.toISOString() : t);

export interface UsageOptions extends ConnectionOptions {
  /** Start of the range (server default: 24 hours before `to`). */
  from?: TimeInput;
  /** End of the range (server default: now). */
  to?: TimeInput;
  /** `organisation` (default), `template`, or `label:<key>`. */
  groupBy?: 'organisation' | 'template' | `label:${string}`;
  /** Only this organisation (the install's admin; others see their own only). */
  orgId?: string;
}

export interface MetricsOptions {
  /** First sample time (server default: 1 hour before `until`). */
  since?: TimeInput;
  /** Last sample time (server default: now). */
  until?: TimeInput;
}

/** CPU seconds, memory GB-seconds, sandbox seconds, disk peak and network bytes over a range, grouped. */
export function getUsage(opts: UsageOptions = {}): Promise<UsageReport> {
  return new HttpClient(opts).json<UsageReport>('GET', '/v1/usage', {
    query: { from: iso(opts.from), to: iso(opts.to), group_by: opts.groupBy, org_id: opts.orgId },
  });
}

export function sandboxMetrics(
  http: HttpClient,
  sandboxId: string,
  opts: MetricsOptions = {},
): Promise<SandboxMetrics> {
  return http.json<SandboxMetrics>(
    'GET',
    `/v1/sandboxes/${encodeURIComponent(sandboxId)}/metrics`,
    { query: { since: iso(opts.since), until: iso(opts.until) } },
  );
}
