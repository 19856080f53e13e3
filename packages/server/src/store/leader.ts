/**
 * Which control plane runs the install's shared background work: webhook
 * delivery, purges of old records, and the sweeps, watches and samples of
 * joined hosts (each control plane always does them for its own in-process
 * host, which only it reaches). On SQLite there is one control plane, and it
 * leads. On PostgreSQL the leader is the control plane that holds a session
 * advisory lock on a connection of its own; the others try again every
 * `retryMs`. When the leader stops, or dies (the server drops a dead
 * session's locks), or loses its connection (checked every `retryMs`),
 * another takes over within about `retryMs`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect';

const LOCK = sql`hashtextextended('warren:leader', 0)`;

export interface LeaderLog {
  info(o: object, m: string): void;
  warn(o: object, m: string): void;
}

export class Leadership {
  private leading = false;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;
  log: LeaderLog | null = null;

  constructor(
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    private readonly db: Kysely<any>,
    private readonly retryMs: number,
  ) {}

  /** Whether this control plane runs the shared background work now. */
  leads(): boolean {
    return !isPostgres(this.db) || this.leading;
  }

  start(): void {
    if (isPostgres(this.db)) this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      await this.db
        .connection()
        .execute(async (conn) => {
          const got = await sql<{
            ok: boolean;
          }>`select pg_try_advisory_lock(${LOCK}) as ok`.execute(conn);
          if (!got.rows[0]?.ok) return;
          this.leading = true;
          this.log?.info({}, 'this control plane leads the background work');
          try {
            // Holding the lock: the connection is checked, so a lost one ends the lead.
            while (await this.pause()) await sql`select 1`.execute(conn);
          } finally {
            this.leading = false;
            await sql`select pg_advisory_unlock(${LOCK})`.execute(conn).catch(() => undefined);
          }
        })
        .catch((err: Error) => {
          this.leading = false;
          this.log?.warn({ err: err.message }, 'background work lead lost; trying again');
        });
      await this.pause();
    }
  }

  /** Waits retryMs; false once stopping. */
  private async pause(): Promise<boolean> {
    await sleep(this.retryMs, undefined, { signal: this.stopping.signal }).catch(() => undefined);
    return !this.stopping.signal.aborted;
  }
}
