import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WarrenError } from '@warren/protocol';
import { planRestore, segmentOf } from '../../src/databases/restore-plan';
import { databaseUrl } from '../../src/databases/urls';

const backups = [
  { key: 'databases/db_a/base/base-1.tar.gz', start_lsn: '0/2000028', at: '2026-01-01T10:00:00Z' },
  { key: 'databases/db_a/base/base-2.tar.gz', start_lsn: '0/5000060', at: '2026-01-01T12:00:00Z' },
];
const wal = [
  '000000010000000000000001',
  '000000010000000000000002',
  '000000010000000000000004',
  '000000010000000000000005',
  '000000010000000000000006',
  '00000002.history',
].map((n) => ({ key: `databases/db_a/wal/${n}`, size: 16 }));
const now = new Date('2026-01-02T00:00:00Z');

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof WarrenError);
    return err.code;
  }
  return null;
};

describe('restore plan', () => {
  it('names the WAL file that holds an LSN', () => {
    assert.equal(segmentOf('0/2000028'), '0000000000000002');
    assert.equal(segmentOf('1/FF000000'), '00000001000000FF');
    assert.equal(segmentOf('0/0'), '0000000000000000');
  });

  it('takes the newest backup and the WAL from its start on', () => {
    const p = planRestore(backups, wal, undefined, now);
    assert.equal(p.backup?.key, backups[1]!.key);
    assert.deepEqual(
      p.wal.map((w) => w.key.split('/').pop()),
      ['000000010000000000000005', '000000010000000000000006', '00000002.history'],
    );
  });

  it('takes the newest backup at or before a target time', () => {
    const p = planRestore(backups, wal, '2026-01-01T11:00:00Z', now);
    assert.equal(p.backup?.key, backups[0]!.key);
    assert.equal(p.wal.length, 5);
  });

  it('refuses targets before the first backup, in the future, and restores without backups', () => {
    assert.equal(
      code(() => planRestore(backups, wal, '2026-01-01T09:00:00Z', now)),
      'INVALID_RESTORE_TARGET',
    );
    assert.equal(
      code(() => planRestore(backups, wal, '2026-01-03T00:00:00Z', now)),
      'INVALID_RESTORE_TARGET',
    );
    assert.equal(
      code(() => planRestore([], wal, undefined, now)),
      'INVALID_RESTORE_TARGET',
    );
  });

  it('starts a database created empty from the seed before its first backup, to latest only', () => {
    const p = planRestore(
      [],
      [...wal, { key: 'databases/db_a/wal/epoch', size: 1 }],
      undefined,
      now,
      true,
    );
    assert.equal(p.backup, null);
    assert.deepEqual(
      p.wal.map((w) => w.key.split('/').pop()),
      wal.map((w) => w.key.split('/').pop()),
    );
    // A point in time still needs a base backup at or before it; once one exists, it is used.
    assert.equal(
      code(() => planRestore([], wal, '2026-01-01T11:00:00Z', now, true)),
      'INVALID_RESTORE_TARGET',
    );
    assert.equal(planRestore(backups, wal, undefined, now, true).backup?.key, backups[1]!.key);
  });
});

describe('database URLs', () => {
  it('carry the endpoint in the user name, with no query string', () => {
    const o = { id: 'db_abc', user: 'app', password: 'p/w', database: 'app' };
    assert.equal(
      databaseUrl({ host: 'localhost', port: 5433 }, { ...o, pooled: false }),
      'postgresql://app.db_abc:p%2Fw@localhost:5433/app',
    );
    assert.equal(
      databaseUrl({ host: '::1', port: 5433 }, { ...o, pooled: true }),
      'postgresql://app.db_abc-pooler:p%2Fw@[::1]:5433/app',
    );
  });
});
