/** Human-readable output: aligned tables and relative times. */

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return all.map(line).join('\n') + '\n';
}

const UNITS: [seconds: number, suffix: string][] = [
  [86400, 'd'],
  [3600, 'h'],
  [60, 'm'],
  [1, 's'],
];

/** '5m ago' or 'in 2h': the largest whole unit, which is all a listing needs. */
export function relativeTime(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const seconds = Math.round((ms - now) / 1000);
  const abs = Math.abs(seconds);
  const unit = UNITS.find(([size]) => abs >= size);
  if (!unit) return 'now';
  const text = `${Math.floor(abs / unit[0])}${unit[1]}`;
  return seconds < 0 ? `${text} ago` : `in ${text}`;
}
