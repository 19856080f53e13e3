import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WarrenError } from '@warren/protocol';
import { AuthFailureLimiter } from '../../src/keys/failures';
import { CreateBuckets } from '../../src/quotas/bucket';
import { looksLikeJwt } from '../../src/keys/jwt';

describe('failed-auth limiter', () => {
  it('blocks an address after the limit within the window, then lets it go', () => {
    let now = 0;
    const l = new AuthFailureLimiter({ limit: 3, windowSeconds: 10, blockSeconds: 5 }, () => now);
    assert.equal(l.fail('a'), false);
    now = 11_000; // the first failure left the window
    assert.equal(l.fail('a'), false);
    assert.equal(l.fail('a'), false);
    l.check('a');
    assert.equal(l.fail('a'), true);
    l.check('b'); // other addresses are not affected
    assert.throws(
      () => l.check('a'),
      (e: WarrenError) =>
        e.code === 'RATE_LIMITED' &&
        (e.details as { retry_after_seconds: number }).retry_after_seconds === 5,
    );
    now += 5_000;
    l.check('a');
  });

  it('a limit of 0 never blocks', () => {
    const l = new AuthFailureLimiter({ limit: 0, windowSeconds: 10, blockSeconds: 5 });
    for (let i = 0; i < 100; i++) assert.equal(l.fail('a'), false);
    l.check('a');
  });
});

describe('create buckets', () => {
  it('allow a burst, then one token per 1/rate seconds', () => {
    let now = 0;
    const b = new CreateBuckets(() => now);
    const limits = { burst: 2, perSecond: 0.5 };
    assert.equal(b.waitSeconds('o', limits), 0);
    b.take('o', limits);
    b.take('o', limits);
    assert.equal(b.waitSeconds('o', limits), 2);
    assert.equal(b.waitSeconds('other', limits), 0);
    now = 1_000;
    assert.equal(b.waitSeconds('o', limits), 1);
    now = 2_000;
    assert.equal(b.waitSeconds('o', limits), 0);
    now = 100_000;
    assert.equal(b.available('o', limits), 2, 'never more than the burst');
  });
});

describe('bearer kinds', () => {
  it('tells JWTs from wrn_ keys', () => {
    assert.equal(looksLikeJwt('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln'), true);
    assert.equal(looksLikeJwt('wrn_0123456789abcdefghij0123456789abcdefghij'), false);
  });
});
