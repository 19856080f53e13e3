/** Egress records: every decision is reported through EgressOptions.onEvent. */
import type { EgressOptions, EgressRecord, EgressTarget, SandboxEgress } from './types';

export function logEgress(
  options: EgressOptions,
  sbx: SandboxEgress,
  e: Omit<EgressRecord, 'at' | 'duration_ms'>,
  started: number,
): void {
  options.onEvent(sbx.id, {
    at: new Date(started).toISOString(),
    duration_ms: Math.round(Date.now() - started),
    ...e,
  });
}

/** A connection the policy (or the protocol) refused: nothing went either way. */
export function logDenied(
  options: EgressOptions,
  sbx: SandboxEgress,
  target: EgressTarget,
  reason: string,
  started: number,
): void {
  logEgress(
    options,
    sbx,
    { ...target, address: null, decision: 'denied', reason, bytes_out: 0, bytes_in: 0 },
    started,
  );
}
