/**
 * The platform's own SQL in a database sandbox (a checkpoint, a WAL switch, a
 * new password): node-postgres on the host, as the superuser, over the
 * server's Unix socket in the sandbox, which the guest agent bridges to the
 * host (HostApi openPort with `unix`); pg_hba.conf trusts local connections.
 * No process starts in the sandbox for it: psql's own start takes 100 ms and
 * more under gVisor, longer than most of these statements.
 */
import { WarrenError, type HostApi } from '@warren/protocol';
import type { Duplex } from 'node:stream';
import pg from 'pg';
import { PG_SOCKET } from './layout';

/** Values as the server sends them (text), as psql prints them. */
const TEXT = { getTypeParser: () => (value: string) => value };

/**
 * node-postgres connects the stream it is given: this one is connected
 * already, so its connect() only says so.
 */
export function connected(stream: Duplex): Duplex {
  return Object.assign(stream, {
    setNoDelay: () => stream,
    connect: () => {
      process.nextTick(() => stream.emit('connect'));
      return stream;
    },
  });
}

/** psql -A -t's output: the rows of each statement that has any, `|` between values, one a line. */
function print(results: pg.QueryArrayResult[]): string {
  let out = '';
  for (const r of results)
    if (r.fields.length > 0)
      for (const row of r.rows)
        out += `${row.map((v) => (v === null ? '' : String(v))).join('|')}\n`;
  return out;
}

/**
 * Runs each of `statements` as a query of its own (several statements in one
 * string run as one transaction) in `database`, as the superuser, and answers
 * what psql -A -t would print. An SQL error, a server that does not answer
 * or `timeoutMs` passing: DATABASE_COMMAND_FAILED. An agent without Unix
 * socket connections (a sandbox started before them) refuses the port with
 * INVALID_REQUEST, thrown as is.
 */
export async function superuserSql(
  host: HostApi,
  sandboxId: string,
  statements: string[],
  database: string,
  timeoutMs: number,
): Promise<string> {
  const failed = (err: unknown): never => {
    const e = err as Error & { code?: string };
    throw new WarrenError('DATABASE_COMMAND_FAILED', `SQL failed: ${e.message}`, {
      ...(e.code && /^[0-9A-Z]{5}$/.test(e.code) && { sqlstate: e.code }),
    });
  };
  const stream = await host.sandboxes
    .openPort(sandboxId, 0, { unix: PG_SOCKET })
    .catch((err: unknown) => {
      if (err instanceof WarrenError && err.code !== 'PORT_NOT_LISTENING') throw err;
      return failed(err);
    });
  const client = new pg.Client({
    user: 'postgres',
    database,
    application_name: 'warren',
    stream: () => connected(stream),
    types: TEXT,
  });
  client.on('error', () => undefined);
  const timer = setTimeout(
    () => stream.destroy(new Error(`no answer within ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    await client.connect();
    const results: pg.QueryArrayResult[] = [];
    for (const text of statements) {
      const r = (await client.query({ text, rowMode: 'array' })) as
        pg.QueryArrayResult | pg.QueryArrayResult[];
      results.push(...(Array.isArray(r) ? r : [r]));
    }
    return print(results);
  } catch (err) {
    return failed(err);
  } finally {
    clearTimeout(timer);
    // Terminate goes out and the stream ends; nobody waits for the server's
    // side to close (its backend exits by itself). Closed for good in 5 s.
    client.end().catch(() => undefined);
    setTimeout(() => stream.destroy(), 5000).unref();
  }
}
