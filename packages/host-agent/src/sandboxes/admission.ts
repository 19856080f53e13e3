/**
 * Memory admission on what sandboxes really use. An idle sandbox uses a
 * small part of its memory_mb (a `base` sandbox about 23 MiB of 512), so
 * reserving memory_mb against the host would leave most of it unused. A
 * sandbox is admitted when
 *
 *   - the memory the sandboxes use (each live one as its cgroup measures it,
 *     at least startMb; each one still starting at startMb), plus startMb for
 *     the new one, stays within the budget, and
 *   - the memory_mb of all of them stays within budget x overcommit: how far
 *     the limits may promise more than the host has, should they all grow.
 *
 * Short of either, the control plane's pressure ladder frees memory (reclaim
 * from idle sandboxes, then hibernate the least recently used) and asks again.
 */

export interface AdmissionSettings {
  budgetMb: number;
  overcommit: number;
  startMb: number;
}

export interface AdmissionState {
  /** Used by the live and starting sandboxes, in MiB. */
  usedMb: number;
  /** Sum of the memory_mb of the live and starting sandboxes. */
  reservedMb: number;
  /** memory_mb of the sandbox asking. */
  memoryMb: number;
}

export type Verdict =
  | { ok: true }
  | {
      ok: false;
      reason: string;
      details: {
        requested_mb: number;
        free_mb: number;
        used_mb: number;
        reserved_mb: number;
        budget_mb: number;
        /** How much measured use must go for the sandbox to fit (0: none). */
        short_used_mb: number;
        /** How much memory_mb must be released for it to fit (0: none). */
        short_reserved_mb: number;
      };
    };

export function admit(s: AdmissionSettings, a: AdmissionState): Verdict {
  const cap = Math.floor(s.budgetMb * s.overcommit);
  const shortUsed = Math.max(0, Math.ceil(a.usedMb + s.startMb - s.budgetMb));
  const shortReserved = Math.max(0, a.reservedMb + a.memoryMb - cap);
  if (shortUsed === 0 && shortReserved === 0) return { ok: true };
  const reason =
    shortUsed > 0
      ? `sandboxes use ${Math.round(a.usedMb)} MiB of a ${s.budgetMb} MiB budget; a new one needs ${s.startMb} MiB`
      : `${a.reservedMb} MiB of memory_mb admitted, ${a.memoryMb} MiB more would pass ${cap} MiB (budget x ${s.overcommit})`;
  return {
    ok: false,
    reason,
    details: {
      requested_mb: a.memoryMb,
      free_mb: Math.max(0, Math.floor(s.budgetMb - a.usedMb)),
      used_mb: Math.round(a.usedMb),
      reserved_mb: a.reservedMb,
      budget_mb: s.budgetMb,
      short_used_mb: shortUsed,
      short_reserved_mb: shortReserved,
    },
  };
}
