/** Usage totals: adding figures up, and grouping sandboxes by organisation, template or a label. */
import type { UsageFigures, UsageGroup } from '@warren/protocol';

/** One sandbox's figures over a range, with what it is grouped by. */
export interface SandboxUsage extends UsageFigures {
  sandbox_id: string;
  org_id: string;
  template: string;
  labels: Record<string, string>;
}

export type GroupBy = 'organisation' | 'template' | { label: string };

export function parseGroupBy(text: string): GroupBy {
  if (text === 'organisation' || text === 'template') return text;
  return { label: text.slice('label:'.length) };
}

export function emptyFigures(): UsageFigures {
  return {
    cpu_seconds: 0,
    memory_gb_seconds: 0,
    sandbox_seconds: 0,
    disk_bytes_peak: 0,
    net_rx_bytes: 0,
    net_tx_bytes: 0,
  };
}

/** Adds b to a; peaks of different sandboxes add up (they held their disks at once, at worst). */
export function addFigures(a: UsageFigures, b: UsageFigures): UsageFigures {
  return {
    cpu_seconds: a.cpu_seconds + b.cpu_seconds,
    memory_gb_seconds: a.memory_gb_seconds + b.memory_gb_seconds,
    sandbox_seconds: a.sandbox_seconds + b.sandbox_seconds,
    disk_bytes_peak: a.disk_bytes_peak + b.disk_bytes_peak,
    net_rx_bytes: a.net_rx_bytes + b.net_rx_bytes,
    net_tx_bytes: a.net_tx_bytes + b.net_tx_bytes,
  };
}

export function groupKey(s: SandboxUsage, by: GroupBy): string | null {
  if (by === 'organisation') return s.org_id;
  if (by === 'template') return s.template;
  return Object.hasOwn(s.labels, by.label) ? (s.labels[by.label] ?? null) : null;
}

/** Figures rounded for the answer: seconds to the millisecond, bytes whole. */
export function rounded(f: UsageFigures): UsageFigures {
  const ms = (n: number) => Math.round(n * 1000) / 1000;
  return {
    cpu_seconds: ms(f.cpu_seconds),
    memory_gb_seconds: ms(f.memory_gb_seconds),
    sandbox_seconds: ms(f.sandbox_seconds),
    disk_bytes_peak: Math.round(f.disk_bytes_peak),
    net_rx_bytes: Math.round(f.net_rx_bytes),
    net_tx_bytes: Math.round(f.net_tx_bytes),
  };
}

/** Groups sandboxes' figures, the group that used most CPU first (then by key). */
export function groupUsage(sandboxes: SandboxUsage[], by: GroupBy): UsageGroup[] {
  const groups = new Map<string | null, { sandboxes: number; figures: UsageFigures }>();
  for (const s of sandboxes) {
    const key = groupKey(s, by);
    const g = groups.get(key) ?? { sandboxes: 0, figures: emptyFigures() };
    g.sandboxes += 1;
    g.figures = addFigures(g.figures, s);
    groups.set(key, g);
  }
  return [...groups.entries()]
    .map(([key, g]) => ({ key, sandboxes: g.sandboxes, ...rounded(g.figures) }))
    .sort(
      (a, b) => b.cpu_seconds - a.cpu_seconds || String(a.key ?? '').localeCompare(b.key ?? ''),
    );
}
