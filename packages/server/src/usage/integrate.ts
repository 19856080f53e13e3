/**
 * From the counters a host reports to the usage of one interval. A host's
 * counters (CPU, network bytes) count from when it last started the sandbox;
 * a wake, or a restart of the agent, starts them again, so a counter that
 * went down counts from 0. Time counts from the previous sample, or from the
 * (re)start when that is later: a hibernated sandbox uses nothing.
 */

/** 1 GB in GB-seconds is 2^30 bytes, as cloud GB-second billing counts. */
export const GIB = 1024 ** 3;

/** What the control plane keeps of the last sample of a sandbox. */
export interface CounterState {
  /** Epoch milliseconds of the sample. */
  at: number;
  /** When the host's counters started counting (epoch ms). */
  startedAt: number;
  cpuSeconds: number;
  memoryBytes: number;
  rxBytes: number;
  txBytes: number;
}

/** One reading of a host's counters and gauges. */
export interface Reading {
  at: number;
  startedAt: number;
  cpuSeconds: number | null;
  memoryBytes: number | null;
  diskBytes: number | null;
  rxBytes: number;
  txBytes: number;
}

/** What a sandbox used in the interval that ends at a reading. */
export interface Increment {
  intervalSeconds: number;
  cpuSeconds: number;
  memoryBytes: number;
  memoryGbSeconds: number;
  diskBytes: number | null;
  rxBytes: number;
  txBytes: number;
}

/** How much a counter grew; one that went down was started again, from 0. */
export function counterDelta(now: number, before: number | undefined): number {
  if (before === undefined || now < before) return now;
  return now - before;
}

export function increment(
  prev: CounterState | null,
  cur: Reading,
): { inc: Increment; state: CounterState } {
  const sameRun = prev !== null && prev.at >= cur.startedAt;
  const from = sameRun ? prev.at : cur.startedAt;
  const intervalSeconds = Math.max(0, cur.at - from) / 1000;
  const memory = cur.memoryBytes ?? 0;
  // Trapezoids between two samples of one run; the first sample of a run holds since its start.
  const meanMemory = sameRun ? (prev.memoryBytes + memory) / 2 : memory;
  const cpuNow = cur.cpuSeconds ?? prev?.cpuSeconds ?? 0;
  const inc: Increment = {
    intervalSeconds,
    cpuSeconds: cur.cpuSeconds === null ? 0 : counterDelta(cpuNow, prev?.cpuSeconds),
    memoryBytes: memory,
    memoryGbSeconds: (meanMemory * intervalSeconds) / GIB,
    diskBytes: cur.diskBytes,
    rxBytes: counterDelta(cur.rxBytes, prev?.rxBytes),
    txBytes: counterDelta(cur.txBytes, prev?.txBytes),
  };
  const state: CounterState = {
    at: cur.at,
    startedAt: cur.startedAt,
    cpuSeconds: cpuNow,
    memoryBytes: memory,
    rxBytes: cur.rxBytes,
    txBytes: cur.txBytes,
  };
  return { inc, state };
}
