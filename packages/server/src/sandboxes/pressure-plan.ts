/**
 * The decisions of the memory pressure ladder, without I/O (unit-tested in
 * test/unit/pressure.test.ts): which sandboxes count as idle, whether
 * reclaiming can be enough, and which idle sandboxes to hibernate.
 */

export interface PressureCandidate {
  id: string;
  /** ISO 8601: the least recent goes first. */
  lastActivityAt: string;
  /** Measured use, in MiB (what hibernating it frees of the budget). */
  usedMb: number;
  /** Its memory_mb (what hibernating it frees of the overcommit cap). */
  memoryMb: number;
}

/** What the host said was missing (INSUFFICIENT_CAPACITY details). */
export interface Shortfall {
  usedMb: number;
  reservedMb: number;
}

export interface IdleRow {
  id: string;
  state: string;
  last_activity_at: string;
  idle_timeout_seconds: number;
}

/**
 * Running or paused sandboxes idle for at least idleSeconds, with no request
 * open, except `exclude` (the one being admitted) and sandboxes that must
 * never hibernate (idle_timeout_seconds 0: databases' servers among them).
 */
export function idleRows<T extends IdleRow>(
  rows: T[],
  o: { now: number; idleSeconds: number; busy: (id: string) => boolean; exclude?: string },
): T[] {
  return rows.filter(
    (r) =>
      (r.state === 'running' || r.state === 'paused') &&
      r.id !== o.exclude &&
      r.idle_timeout_seconds !== 0 &&
      !o.busy(r.id) &&
      o.now - Date.parse(r.last_activity_at) >= o.idleSeconds * 1000,
  );
}

/** `items` sorted by their last activity (ISO 8601, from `at`), the least recent first. */
export function leastRecentlyUsed<T>(items: T[], at: (item: T) => string): T[] {
  return [...items].sort((a, b) => Date.parse(at(a)) - Date.parse(at(b)));
}

/**
 * Reclaiming cache frees measured use only: worth a try when that is all that
 * is short and there is an idle sandbox to reclaim from.
 */
export function reclaimMayHelp(short: Shortfall, candidates: number): boolean {
  return short.usedMb > 0 && short.reservedMb === 0 && candidates > 0;
}

/**
 * The least recently used idle sandboxes whose hibernation covers the
 * shortfall, oldest first; null when all of them together would not: then
 * none is hibernated and the request is refused.
 */
export function pickVictims(short: Shortfall, candidates: PressureCandidate[]): string[] | null {
  const lru = leastRecentlyUsed(candidates, (c) => c.lastActivityAt);
  const picked: string[] = [];
  let used = 0;
  let reserved = 0;
  for (const c of lru) {
    if (used >= short.usedMb && reserved >= short.reservedMb) break;
    picked.push(c.id);
    used += c.usedMb;
    reserved += c.memoryMb;
  }
  return used >= short.usedMb && reserved >= short.reservedMb ? picked : null;
}
