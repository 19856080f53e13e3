/** Errors of a PostgreSQL store that is down become 503 STORE_UNAVAILABLE; others stay INTERNAL. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { toWarrenError } from '../../src/errors';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('store errors', () => {
  it('maps a store that is down or restarting to STORE_UNAVAILABLE', () => {
    for (const err of [
      withCode('terminating connection due to administrator command', '57P01'),
      withCode('the database system is starting up', '57P03'),
      withCode('connection failure', '08006'),
      withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      withCode('write EPIPE', 'EPIPE'),
      withCode('connect ENOENT /tmp/wpg-x/.s.PGSQL.5432', 'ENOENT'),
      new Error('Connection terminated unexpectedly'),
      new Error('Client has encountered a connection error and is not queryable'),
    ]) {
      const e = toWarrenError(err);
      assert.equal(e.code, 'STORE_UNAVAILABLE', err.message);
      assert.equal(e.status, 503);
    }
  });

  it('leaves other errors INTERNAL', () => {
    assert.equal(toWarrenError(withCode('no such file /etc/x', 'ENOENT')).code, 'INTERNAL');
    assert.equal(toWarrenError(withCode('duplicate key', '23505')).code, 'INTERNAL');
    assert.equal(toWarrenError(new Error('boom')).code, 'INTERNAL');
  });
});
