import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { admit } from '../../src/sandboxes/admission';

describe('memory admission on measured use', () => {
  const s = { budgetMb: 1000, overcommit: 4, startMb: 64 };

  it('admits on measured use, past the sum of memory_mb up to the overcommit cap', () => {
    // 6 sandboxes of 512 MiB (3 GiB of limits against a 1000 MiB budget) using 23 MiB each.
    assert.deepEqual(admit(s, { usedMb: 6 * 23, reservedMb: 6 * 512, memoryMb: 512 }), {
      ok: true,
    });
  });

  it('refuses past the overcommit cap with how much memory_mb is short', () => {
    const v = admit(s, { usedMb: 8 * 23, reservedMb: 8 * 512, memoryMb: 512 });
    assert.equal(v.ok, false);
    assert.deepEqual(!v.ok && [v.details.short_used_mb, v.details.short_reserved_mb], [0, 608]);
  });

  it('refuses on measured use with how much use is short', () => {
    const v = admit(s, { usedMb: 980, reservedMb: 1024, memoryMb: 512 });
    assert.equal(v.ok, false);
    assert.deepEqual(!v.ok && v.details, {
      requested_mb: 512,
      free_mb: 20,
      used_mb: 980,
      reserved_mb: 1024,
      budget_mb: 1000,
      short_used_mb: 44,
      short_reserved_mb: 0,
    });
  });
});
