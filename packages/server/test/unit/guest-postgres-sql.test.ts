/**
 * GuestPostgres.sql()'s choice of path, against a fake HostApi: node-postgres
 * over the server's Unix socket (no process in the sandbox), psql in the
 * sandbox when its agent predates Unix socket connections, and errors.
 * Real PostgreSQL behind both paths is covered by test/e2e/db-postgres.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  WarrenError,
  type ExecEvent,
  type GuestProcessStart,
  type HostApi,
} from '@warren/protocol';
import { GuestPostgres } from '../../src/databases/postgres';
import { PG_SOCKET } from '../../src/databases/postgres/layout';
import { FakePostgres } from './fake-postgres';

function fakeHost(openPort: HostApi['sandboxes']['openPort']) {
  const execs: GuestProcessStart[] = [];
  const host = {
    sandboxes: { openPort },
    processes: {
      exec: async (_id: string, start: GuestProcessStart) => {
        execs.push(start);
        async function* events(): AsyncGenerator<ExecEvent> {
          yield { type: 'stdout', data: 'from psql\n' };
          yield { type: 'exit', exit_code: 0, signal: null, timed_out: false, duration_ms: 1 };
        }
        return events();
      },
    },
  } as unknown as HostApi;
  return { host, execs };
}

describe('GuestPostgres.sql', () => {
  let server: FakePostgres;
  before(async () => {
    server = await new FakePostgres().start();
  });
  after(() => server.close());

  test('runs on the Unix socket as the superuser, one query per statement, printed as psql does', async () => {
    const opened: unknown[] = [];
    const { host, execs } = fakeHost(async (id, port, options) => {
      opened.push([id, port, options]);
      return server.open();
    });
    const out = await new GuestPostgres(host, 'sbx_1').sql(['select a', 'select b'], 'postgres');
    assert.equal(out, 'a\nb\n');
    assert.deepEqual(opened, [['sbx_1', 0, { unix: PG_SOCKET }]]);
    assert.equal(execs.length, 0);
    const session = server.sessions.at(-1)!;
    assert.equal(session.params.get('user'), 'postgres');
    assert.equal(session.params.get('database'), 'postgres');
    assert.deepEqual(session.queries, ['select a', 'select b']);
  });

  test('falls back to psql in the sandbox when its agent refuses Unix sockets', async () => {
    const { host, execs } = fakeHost(() =>
      Promise.reject(new WarrenError('INVALID_REQUEST', 'port must be an integer from 1 to 65535')),
    );
    const out = await new GuestPostgres(host, 'sbx_1').sql(['select 1', 'select 2']);
    assert.equal(out, 'from psql\n');
    assert.equal(execs.length, 1);
    assert.match(execs[0]!.cmd, /\/psql$/);
    assert.equal(execs[0]!.stdin, 'select 1;\nselect 2');
    assert.equal(execs[0]!.env?.PGDATABASE, 'app');
  });

  test('a server that does not listen or goes away is DATABASE_COMMAND_FAILED; other errors pass', async () => {
    const notListening = fakeHost(() =>
      Promise.reject(new WarrenError('PORT_NOT_LISTENING', 'nothing accepts connections')),
    );
    await assert.rejects(new GuestPostgres(notListening.host, 'sbx_1').sql('select 1'), {
      code: 'DATABASE_COMMAND_FAILED',
    });
    assert.equal(notListening.execs.length, 0);
    const stopped = fakeHost(() =>
      Promise.reject(new WarrenError('SANDBOX_NOT_RUNNING', 'sandbox is not running')),
    );
    await assert.rejects(new GuestPostgres(stopped.host, 'sbx_1').sql('select 1'), {
      code: 'SANDBOX_NOT_RUNNING',
    });
    const cut = fakeHost(() => server.open());
    await assert.rejects(new GuestPostgres(cut.host, 'sbx_1').sql('terminate'), (err: unknown) => {
      assert.ok(err instanceof WarrenError);
      assert.equal(err.code, 'DATABASE_COMMAND_FAILED');
      assert.deepEqual(err.details, { sqlstate: '57P01' });
      return true;
    });
  });

  test('a server that does not answer in time is DATABASE_COMMAND_FAILED', async () => {
    const { Duplex } = await import('node:stream');
    // Accepts the startup and never answers.
    const silent = fakeHost(async () => new Duplex({ read() {}, write: (_c, _e, cb) => cb() }));
    await assert.rejects(
      new GuestPostgres(silent.host, 'sbx_1').sql('select 1', 'app', { timeoutMs: 100 }),
      { code: 'DATABASE_COMMAND_FAILED', message: /no answer within 100 ms/ },
    );
  });
});
