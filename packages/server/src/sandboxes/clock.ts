/** Milliseconds since the epoch. Injected so that TTL and idle logic can be tested without waiting. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

export function isoIn(clock: Clock, seconds = 0): string {
  return new Date(clock() + seconds * 1000).toISOString();
}

/** Activity now and the expiry `ttlSeconds` after it, from one reading of the clock. */
export function activityNow(
  clock: Clock,
  ttlSeconds: number,
): { last_activity_at: string; expires_at: string } {
  const now = clock();
  return {
    last_activity_at: new Date(now).toISOString(),
    expires_at: new Date(now + ttlSeconds * 1000).toISOString(),
  };
}
