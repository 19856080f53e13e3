import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { idleRows, pickVictims, reclaimMayHelp } from '../../src/sandboxes/pressure-plan';

const at = (minutesAgo: number) => new Date(Date.UTC(2026, 0, 1, 12, 0) - minutesAgo * 60_000);
const NOW = at(0).getTime();
const iso = (minutesAgo: number) => at(minutesAgo).toISOString();

describe('the pressure ladder', () => {
  const row = (id: string, minutesAgo: number, extra: object = {}) => ({
    id,
    state: 'running',
    last_activity_at: iso(minutesAgo),
    idle_timeout_seconds: 300,
    ...extra,
  });

  it('counts as idle only sandboxes unused long enough, not busy, not excluded, allowed to sleep', () => {
    const rows = [
      row('old', 10),
      row('recent', 0.5),
      row('busy', 10),
      row('self', 10),
      row('database', 10, { idle_timeout_seconds: 0 }),
      row('asleep', 10, { state: 'hibernated' }),
      row('paused', 10, { state: 'paused' }),
    ];
    const idle = idleRows(rows, {
      now: NOW,
      idleSeconds: 60,
      busy: (id) => id === 'busy',
      exclude: 'self',
    });
    assert.deepEqual(
      idle.map((r) => r.id),
      ['old', 'paused'],
    );
  });

  it('tries reclaim first only for a shortage of measured use with someone to reclaim from', () => {
    assert.equal(reclaimMayHelp({ usedMb: 10, reservedMb: 0 }, 3), true);
    assert.equal(reclaimMayHelp({ usedMb: 10, reservedMb: 0 }, 0), false);
    assert.equal(reclaimMayHelp({ usedMb: 10, reservedMb: 100 }, 3), false);
    assert.equal(reclaimMayHelp({ usedMb: 0, reservedMb: 100 }, 3), false);
  });

  it('hibernates the least recently used idle sandboxes, just enough of them', () => {
    const c = (id: string, minutesAgo: number, usedMb: number) => ({
      id,
      lastActivityAt: iso(minutesAgo),
      usedMb,
      memoryMb: 512,
    });
    const candidates = [c('b', 5, 30), c('a', 20, 25), c('c', 2, 100)];
    assert.deepEqual(pickVictims({ usedMb: 40, reservedMb: 0 }, candidates), ['a', 'b']);
    assert.deepEqual(pickVictims({ usedMb: 1, reservedMb: 0 }, candidates), ['a']);
    assert.deepEqual(pickVictims({ usedMb: 0, reservedMb: 1000 }, candidates), ['a', 'b']);
  });

  it('hibernates nothing when all idle sandboxes together would not be enough', () => {
    const c = { id: 'a', lastActivityAt: iso(5), usedMb: 30, memoryMb: 512 };
    assert.equal(pickVictims({ usedMb: 31, reservedMb: 0 }, [c]), null);
    assert.equal(pickVictims({ usedMb: 1, reservedMb: 0 }, []), null);
  });
});
