/**
 * Failed-authentication limiting per client address: after `limit` failures
 * within `windowSeconds`, every authenticated request from that address gets
 * RATE_LIMITED (429, Retry-After) for `blockSeconds`. Successful requests
 * cost one map lookup and are never slowed; the map keeps only addresses with
 * recent failures.
 */
import { WarrenError } from '@warren/protocol';
import type { AuthFailureConfig } from '../auth-config';

interface Entry {
  /** Times of failures within the window, oldest first. */
  failures: number[];
  blockedUntil: number;
}

/** Addresses kept at most; past that the oldest are forgotten (a flood of spoofed sources). */
const MAX_ADDRESSES = 100_000;

export class AuthFailureLimiter {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly config: AuthFailureConfig,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws RATE_LIMITED while the address is blocked. */
  check(address: string): void {
    const entry = this.entries.get(address);
    if (!entry) return;
    const left = entry.blockedUntil - this.now();
    if (left > 0) {
      const seconds = Math.ceil(left / 1000);
      throw new WarrenError(
        'RATE_LIMITED',
        `too many failed authentications from ${address}: try again in ${seconds} s`,
        { retry_after_seconds: seconds },
      );
    }
  }

  /** Records a failed authentication; returns whether the address is now blocked. */
  fail(address: string): boolean {
    if (this.config.limit <= 0) return false;
    const now = this.now();
    const since = now - this.config.windowSeconds * 1000;
    const entry = this.entries.get(address) ?? { failures: [], blockedUntil: 0 };
    this.entries.delete(address); // re-inserted last: the map stays in order of last failure
    entry.failures = entry.failures.filter((t) => t > since);
    entry.failures.push(now);
    if (entry.failures.length >= this.config.limit) {
      entry.blockedUntil = now + this.config.blockSeconds * 1000;
      entry.failures = [];
    }
    this.entries.set(address, entry);
    this.prune(now);
    return entry.blockedUntil > now;
  }

  private prune(now: number): void {
    const horizon = now - this.config.windowSeconds * 1000;
    for (const [address, e] of this.entries) {
      const stale = e.blockedUntil <= now && (e.failures.at(-1) ?? 0) <= horizon;
      if (!stale && this.entries.size <= MAX_ADDRESSES) break;
      this.entries.delete(address);
    }
  }
}
