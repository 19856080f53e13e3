/** Usage figures for the dashboard: ranges, chart series and shares; pure, unit-tested. */
import type { UsageSample } from './types';

export const RANGES = {
  '1h': 3600,
  '6h': 6 * 3600,
  '24h': 24 * 3600,
  '7d': 7 * 24 * 3600,
} as const;
export type RangeKey = keyof typeof RANGES;

/** The `from` and `to` of a range ending at `now` (ms since the epoch), as ISO strings. */
export function rangeOf(key: RangeKey, now: number): { from: string; to: string } {
  return {
    from: new Date(now - RANGES[key] * 1000).toISOString(),
    to: new Date(now).toISOString(),
  };
}

/** The columns a time chart draws: seconds since the epoch, and one array per figure. */
export function sampleSeries(samples: UsageSample[]): {
  times: number[];
  cpuPercent: number[];
  memoryMiB: number[];
  diskMiB: (number | null)[];
  netKiBps: number[];
} {
  const MiB = 1024 * 1024;
  return {
    times: samples.map((s) => Date.parse(s.at) / 1000),
    cpuPercent: samples.map((s) => s.cpu_percent),
    memoryMiB: samples.map((s) => s.memory_bytes / MiB),
    diskMiB: samples.map((s) => (s.disk_bytes === null ? null : s.disk_bytes / MiB)),
    netKiBps: samples.map((s) =>
      s.interval_seconds > 0 ? (s.net_rx_bytes + s.net_tx_bytes) / 1024 / s.interval_seconds : 0,
    ),
  };
}

/** Each value as a percentage of the largest (for bars); all 0 when nothing was used. */
export function shares(values: number[]): number[] {
  const max = Math.max(0, ...values);
  return values.map((v) => (max > 0 ? Math.round((v / max) * 1000) / 10 : 0));
}

/** `group_by` from the form: `organisation`, `template`, or `label:<key>` when a key is given. */
export function groupBy(kind: string, labelKey: string): string | null {
  if (kind !== 'label') return kind;
  const key = labelKey.trim();
  return key && !/\s/.test(key) ? `label:${key}` : null;
}

/** A figure with a unit and few digits: 812.4 s, 1.25 GiB·s. */
export function formatFigure(v: number, unit: string): string {
  const digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return `${v.toFixed(digits)} ${unit}`;
}
