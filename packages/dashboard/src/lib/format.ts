/** Formatting of times and sizes for the dashboard; pure, unit-tested. */

/** A duration in seconds as the two largest units: `2d 3h`, `4h 05m`, `12m 05s`, `9s`. */
export function formatDuration(totalSeconds: number): string {
  const s = Math.max(0, Math.floor(totalSeconds));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${pad(m)}m`;
  if (m > 0) return `${m}m ${pad(sec)}s`;
  return `${sec}s`;
}

export interface TtlView {
  /** What the TTL column shows. */
  text: string;
  /** `ok`, `soon` (under a minute left), `expired`, or `none` (persistent or stopped). */
  tone: 'ok' | 'soon' | 'expired' | 'none';
}

/** The TTL countdown of a sandbox at `now` (ms since the epoch). */
export function ttlCountdown(
  sbx: { state: string; expires_at: string; persistent: boolean },
  now: number,
): TtlView {
  if (sbx.state === 'stopped' || sbx.state === 'stopping') return { text: '-', tone: 'none' };
  if (sbx.persistent) return { text: 'persistent', tone: 'none' };
  const left = (Date.parse(sbx.expires_at) - now) / 1000;
  if (!Number.isFinite(left)) return { text: '-', tone: 'none' };
  if (left <= 0) return { text: 'expired', tone: 'expired' };
  return { text: formatDuration(left), tone: left < 60 ? 'soon' : 'ok' };
}

/** How long ago an ISO time was, at `now`: `12m 05s ago`. */
export function age(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return '-';
  return `${formatDuration((now - t) / 1000)} ago`;
}

export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** Labels as `k=v` text, and back: the label filter and the create form use this. */
export function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

export function parseLabels(text: string): {
  labels: Record<string, string>;
  error: string | null;
} {
  const labels: Record<string, string> = {};
  for (const part of text.split(/[,\n]/)) {
    const item = part.trim();
    if (!item) continue;
    const eq = item.indexOf('=');
    if (eq <= 0) return { labels, error: `"${item}" is not key=value` };
    labels[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return { labels, error: null };
}

/** The parent directory of an absolute path in a sandbox. */
export function parentDir(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  const i = trimmed.lastIndexOf('/');
  return i <= 0 ? '/' : trimmed.slice(0, i);
}

export function joinPath(dir: string, name: string): string {
  return `${dir.replace(/\/+$/, '')}/${name}`;
}

/** Whether a file is previewed as text or as an image, by its name. */
export function previewKind(name: string): 'image' | 'text' | null {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase() ?? '';
  if (['png', 'jpg', 'jpeg', 'gif', 'webp', 'svg', 'bmp', 'ico'].includes(ext)) return 'image';
  if (
    ext === '' ||
    /^(txt|md|json|ya?ml|toml|ini|cfg|conf|log|csv|tsv|py|js|mjs|cjs|ts|tsx|jsx|sh|bash|c|h|cpp|rs|go|java|rb|php|html|css|xml|sql|env|lock)$/.test(
      ext,
    )
  )
    return 'text';
  return null;
}
