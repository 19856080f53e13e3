/** Milliseconds since the epoch. Injected so that TTL and idle logic can be tested without waiting. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

export function isoIn(clock: Clock, seconds = 0): string {
  return new Date(clock() + seconds * 1000).toISOString();
}
