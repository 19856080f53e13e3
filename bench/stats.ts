/** Timing samples: taking them, median and p95, and the table the benchmark prints. */
export const now = () => performance.now();

export async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = now();
  const v = await fn();
  return [now() - t, v];
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
}

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export interface Row {
  name: string;
  unit: string;
  warren: number[];
  direct: number[];
  directName: string;
  /** For throughput rows bigger is better; the ratio is then direct/warren time. */
  note?: string;
}

const fmt = (n: number) => (Number.isFinite(n) ? (n >= 100 ? n.toFixed(0) : n.toFixed(1)) : '-');

export function printTable(rows: Row[]): void {
  const header = [
    'operation',
    'n',
    'warren median',
    'warren p95',
    'direct median',
    'direct p95',
    'ratio',
    'direct operation',
  ];
  const lines = rows.map((r) => {
    const wm = percentile(r.warren, 50);
    const dm = percentile(r.direct, 50);
    return [
      r.name,
      String(r.warren.length),
      `${fmt(wm)} ${r.unit}`,
      `${fmt(percentile(r.warren, 95))} ${r.unit}`,
      `${fmt(dm)} ${r.unit}`,
      `${fmt(percentile(r.direct, 95))} ${r.unit}`,
      `${(wm / dm).toFixed(2)}x`,
      r.directName,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const show = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(show(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(show(l));
  console.log(
    '\nratio = warren median / direct median (time; lower is better, 1.00x = same as runsc alone)',
  );
}
