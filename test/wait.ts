/**
 * Waiting in tests: for a condition, never for a length of time. A test that
 * sleeps "long enough" either wastes the time or races on a slow machine;
 * waitFor polls until the condition holds and fails with a message that names
 * what it waited for once the deadline passes.
 */
import { setTimeout as delay } from 'node:timers/promises';

export interface WaitOptions {
  /** What is awaited, for the error: "the counter to start" (a function: read at the failure). */
  what: string | (() => string);
  /** Deadline from the first check. Default 10 s. */
  timeoutMs?: number;
  /** Pause between two checks. Default 50 ms. */
  intervalMs?: number;
}

/** What a truthy result of a check can be. */
export type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/**
 * Polls `check` until it returns a truthy value, and returns that value.
 * Throws `timed out after N ms waiting for <what>` when the deadline passes.
 * An exception from `check` is a failure at once, not a reason to go on waiting.
 * A check that itself hangs is left to the test's own timeout (--test-timeout).
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { what, timeoutMs = 10_000, intervalMs = 50 }: WaitOptions,
): Promise<Truthy<T>> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    const result = await check();
    if (result) return result as Truthy<T>;
    const elapsed = Date.now() - started;
    if (elapsed >= timeoutMs) {
      throw new Error(
        `timed out after ${elapsed} ms (${attempt} checks) waiting for ${typeof what === 'function' ? what() : what}; last result: ${String(result)}`,
      );
    }
    await delay(Math.min(intervalMs, timeoutMs - elapsed));
  }
}

/** Waits until the wall clock is past `at` (ms since the epoch, or an ISO date). */
export async function waitUntil(at: number | string, what: string, timeoutMs = 30_000) {
  const when = typeof at === 'string' ? Date.parse(at) : at;
  await waitFor(() => Date.now() > when, { what, timeoutMs, intervalMs: 10 });
}

/**
 * Settles `promise` within `ms`, or rejects naming `what`: a call that hangs
 * is a failure, not a stuck run.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]);
}
