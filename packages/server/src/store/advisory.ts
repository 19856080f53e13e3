/**
 * Work that must not run in two control planes at once (a quota check and the
 * record it admits). SQLite's store belongs to one process, whose own locks
 * (KeyedLock) already serialise such work, so there it just runs. On
 * PostgreSQL it runs holding a session-level advisory lock named by the key,
 * on a connection of its own; other processes sharing the database wait for
 * it, and the server releases it if this process dies. The work itself uses
 * the pool's other connections: at most half the pool holds locks at once,
 * so the work always finds a connection.
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect';

export class AdvisoryLocks {
  private holders = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    private readonly db: Kysely<any>,
    private readonly maxHolders: number,
  ) {}

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    if (!isPostgres(this.db)) return fn();
    while (this.holders >= this.maxHolders) await new Promise<void>((r) => this.waiting.push(r));
    this.holders++;
    try {
      return await this.db.connection().execute(async (conn) => {
        const id = sql`hashtextextended(${`warren:${key}`}, 0)`;
        await sql`select pg_advisory_lock(${id})`.execute(conn);
        try {
          return await fn();
        } finally {
          await sql`select pg_advisory_unlock(${id})`.execute(conn);
        }
      });
    } finally {
      this.holders--;
      this.waiting.shift()?.();
    }
  }
}
