/**
 * The retry schedule of Standard Webhooks / Svix: an attempt at once, then
 * after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h: eight attempts over
 * about 27 hours. `scale` shrinks it (tests, benchmarks).
 */
export const RETRY_SCHEDULE_MS = [
  0,
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3600_000,
  5 * 3600_000,
  10 * 3600_000,
  10 * 3600_000,
] as const;

/** Milliseconds to wait before the next attempt after `attempts` failed ones; null when spent. */
export function retryDelay(attempts: number, scale: number): number | null {
  const delay = RETRY_SCHEDULE_MS[attempts];
  return delay === undefined ? null : Math.round(delay * scale);
}
