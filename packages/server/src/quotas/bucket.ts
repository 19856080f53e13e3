/** Token buckets of sandbox creates, one per organisation: `burst` tokens, refilled at `perSecond` (> 0). */
export interface BucketLimits {
  burst: number;
  perSecond: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class CreateBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Tokens available now (fractional while refilling). */
  available(orgId: string, limits: BucketLimits): number {
    const b = this.buckets.get(orgId);
    if (!b) return limits.burst;
    const refilled = b.tokens + ((this.now() - b.at) / 1000) * limits.perSecond;
    return Math.min(limits.burst, refilled);
  }

  /** Seconds until one token is there; 0 when one is now. */
  waitSeconds(orgId: string, limits: BucketLimits): number {
    const missing = 1 - this.available(orgId, limits);
    if (missing <= 0) return 0;
    return Math.ceil(missing / limits.perSecond);
  }

  /** Takes one token; the caller has checked that one is there. */
  take(orgId: string, limits: BucketLimits): void {
    this.buckets.set(orgId, { tokens: this.available(orgId, limits) - 1, at: this.now() });
  }
}
