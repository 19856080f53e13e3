/**
 * PostgreSQL in a database sandbox, driven through HostApi only: a sandbox of
 * the `postgres-17` template with the database's volume at PG_MOUNT. The
 * cluster lives on the volume (PG_DATA); PostgreSQL listens on the sandbox's
 * loopback (PG_PORT) and on a Unix socket, PgBouncer on PGBOUNCER_PORT. Every
 * step runs as the `postgres` user of the sandbox, except the one that sets
 * up directories and owners (root).
 *
 * Passwords never enter the sandbox: Warren makes the SCRAM secret itself
 * (postgres/scram.ts). WAL leaves through the archive_command of the template
 * (warren-pg-archive), which waits in PG_OUTBOX until the host takes the file.
 */
import { WarrenError, type GuestProcessStart, type HostApi } from '@warren/protocol';
import { runOk, run, sh } from './postgres/guest';
import { DB_ROLE, PG_BIN, PG_STAGING, SOCKET_DIR } from './postgres/layout';
import { superuserSql } from './postgres/client';
import { scramSecret } from './postgres/scram';
import {
  BASE_BACKUP,
  CONFIGURE,
  CONFIGURE_START,
  INIT,
  PREPARE,
  READY,
  REFUSED,
  RESTORE,
  START,
  STOP,
} from './postgres/scripts';
import { PGBOUNCER_CONF, PG_HBA, alterPassword, warrenConf } from './postgres/settings';

export {
  DB_TEMPLATE,
  PG_MOUNT,
  PG_DATA,
  PG_OUTBOX,
  PG_STAGING,
  PG_PORT,
  HANDOFF_SOCKET,
  PGBOUNCER_HANDOFF_SOCKET,
  PGBOUNCER_PORT,
  DB_ROLE,
  RESTORE_BASE,
} from './postgres/layout';

/** How long start() and stop() wait by default (crash or archive recovery can be long). */
const DEFAULT_WAIT_SECONDS = 600;

/** A name of a file or directory in staging. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** A path in the sandbox that can go into a setting between double quotes. */
const PATH = /^\/[A-Za-z0-9._/-]+$/;

export interface BaseBackup {
  /** In the sandbox: PG_STAGING/<name>/base.tar.gz (WAL to reach consistency included). */
  path: string;
  startLsn: string;
  /** When the backup started (ISO 8601, UTC). */
  time: string;
  /** The first WAL file the backup needs, and its timeline. */
  startWalFile: string;
  timeline: number;
  /** Where the backup ends: a restore is consistent once replay has passed it. */
  endLsn: string | null;
}

export interface RestoreOptions {
  /** base.tar.gz in the sandbox (under PG_STAGING), or the directory the host unpacked it to. */
  backup: string;
  /** A directory of archived WAL files in the sandbox (under PG_STAGING). */
  walDir: string;
  /** Recover up to this instant (a timestamptz, e.g. ISO 8601); without it, to the end of the WAL. */
  targetTime?: string;
  password: string;
  archiveTimeoutSeconds: number;
  /** How long to wait for recovery; default 600 s. */
  timeoutSeconds?: number;
}

function checkArchiveTimeout(seconds: number): void {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > 1073741823)
    throw new WarrenError('INVALID_REQUEST', `invalid archive timeout ${seconds}`);
}

export class GuestPostgres {
  constructor(
    private readonly host: HostApi,
    readonly sandboxId: string,
  ) {}

  private ok(start: GuestProcessStart, what: string): Promise<string> {
    return runOk(this.host, this.sandboxId, start, what);
  }

  /** Runs one of the scripts of postgres/scripts.ts. */
  private script(start: GuestProcessStart, what: string): Promise<string> {
    return this.ok(start, what).catch((err: unknown) => {
      // It refused because of what it found (a non-empty data directory, no volume).
      const exit = (err as WarrenError).details as { exit_code?: number } | undefined;
      if (err instanceof WarrenError && exit?.exit_code === REFUSED)
        throw new WarrenError('INVALID_STATE', err.message, err.details);
      throw err;
    });
  }

  private asPostgres(
    script: string,
    args: string[],
    what: string,
    o: { stdin?: string; wait?: number; bash?: boolean } = {},
  ) {
    const timeoutMs = o.wait ? (o.wait + 60) * 1000 : undefined;
    const start = sh(script, args, { user: 'postgres', stdin: o.stdin, timeoutMs, bash: o.bash });
    return this.script(start, what);
  }

  /** Root's part of a new data directory: the volume's owner and layout. */
  private async prepare(): Promise<void> {
    await this.script(sh(PREPARE, [], { user: 'root' }), 'preparing the volume');
  }

  /**
   * A new, empty volume: copies the template's seed cluster into PG_DATA
   * (never over a non-empty one: INVALID_STATE) and writes Warren's settings.
   * Does not start; the seed's app role has no password until start() gets one.
   */
  async init(o: { archiveTimeoutSeconds: number }): Promise<void> {
    checkArchiveTimeout(o.archiveTimeoutSeconds);
    await this.prepare();
    await this.asPostgres(INIT, [warrenConf(o), PG_HBA], 'initialising the cluster');
  }

  /**
   * Rewrites the settings Warren owns (warren.conf, included at the end of
   * postgresql.conf, and pg_hba.conf); a running server reloads them. Call it
   * before every start so settings of a new release reach old databases.
   */
  async configure(o: { archiveTimeoutSeconds: number }): Promise<void> {
    checkArchiveTimeout(o.archiveTimeoutSeconds);
    await this.asPostgres(CONFIGURE, [warrenConf(o), PG_HBA], 'configuring postgres');
  }

  /**
   * Starts PostgreSQL (pg_ctl) and PgBouncer unless they run, and resolves once
   * the server answers a query out of recovery. A cluster that was not shut
   * down cleanly runs crash recovery first; a restored one replays its WAL and
   * is promoted. `password`, if given, then becomes the app role's password.
   */
  async start(o: { timeoutSeconds?: number; password?: string } = {}): Promise<void> {
    const wait = o.timeoutSeconds ?? DEFAULT_WAIT_SECONDS;
    await this.asPostgres(START, [String(wait), PGBOUNCER_CONF], 'starting postgres', {
      wait,
      bash: true,
    });
    if (o.password !== undefined) await this.setPassword(o.password);
  }

  /**
   * configure(), then start() in the same exec into the sandbox (one round
   * trip less: a branch, a crash recovery); `password`, if given, then
   * becomes the app role's password.
   */
  async configureAndStart(o: {
    archiveTimeoutSeconds: number;
    password?: string;
    timeoutSeconds?: number;
  }): Promise<void> {
    checkArchiveTimeout(o.archiveTimeoutSeconds);
    const wait = o.timeoutSeconds ?? DEFAULT_WAIT_SECONDS;
    await this.asPostgres(
      CONFIGURE_START,
      [String(wait), PGBOUNCER_CONF, warrenConf(o), PG_HBA],
      'starting postgres',
      { wait, bash: true },
    );
    if (o.password !== undefined) await this.setPassword(o.password);
  }

  /** Stops PgBouncer, then PostgreSQL with a fast shutdown (clean: no recovery at the next start). */
  async stop(o: { timeoutSeconds?: number } = {}): Promise<void> {
    const wait = o.timeoutSeconds ?? DEFAULT_WAIT_SECONDS;
    await this.asPostgres(STOP, [String(wait)], 'stopping postgres', { wait, bash: true });
  }

  /** Whether the server answers queries out of recovery and PgBouncer runs (false if the sandbox does not answer). */
  async isReady(): Promise<boolean> {
    const start = sh(READY, [], { user: 'postgres', timeoutMs: 10_000 });
    const r = await run(this.host, this.sandboxId, start).catch(() => null);
    return r?.exitCode === 0;
  }

  /**
   * Runs SQL as the superuser in `database` (default: the app database) and
   * returns what psql -A -t prints: rows, `|`-separated, one a line. Each
   * string of an array is a query of its own (ALTER SYSTEM cannot share one).
   * Failure: DATABASE_COMMAND_FAILED with the server's error.
   */
  async sql(
    query: string | string[],
    database: string = DB_ROLE,
    o: { timeoutMs?: number } = {},
  ): Promise<string> {
    const statements = typeof query === 'string' ? [query] : query;
    const timeoutMs = o.timeoutMs ?? 300_000;
    try {
      return await superuserSql(this.host, this.sandboxId, statements, database, timeoutMs);
    } catch (err) {
      // A guest agent from before Unix socket connections (a database sandbox
      // an older release started, restored from its hibernation): psql in it.
      if (!(err instanceof WarrenError && err.code === 'INVALID_REQUEST')) throw err;
      return this.psql(statements.join(';\n'), database, timeoutMs);
    }
  }

  /** sql() with psql in the sandbox (-X -A -t -q, stopping at the first error); the SQL goes in on stdin. */
  private psql(query: string, database: string, timeoutMs: number): Promise<string> {
    return this.ok(
      {
        cmd: `${PG_BIN}/psql`,
        args: ['-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-h', SOCKET_DIR],
        user: 'postgres',
        cwd: '/',
        // A name in PGDATABASE is only ever a name (`-d` would take a connection string).
        env: { PGDATABASE: database, PGAPPNAME: 'warren' },
        stdin: query,
        timeout_ms: timeoutMs,
      },
      'SQL',
    );
  }

  /**
   * Ends the current WAL file (pg_switch_wal) and answers the name of the last
   * file that has to reach the archive for everything written so far to be
   * there. pg_switch_wal answers the position just past the file it ended,
   * the first byte of the next file, and PostgreSQL 17's pg_walfile_name names
   * the file holding that byte (earlier versions named the one before at a
   * boundary): one byte back is the file that was ended. With nothing written
   * since the last switch there is nothing to end, and that names the file
   * ended before, archived already.
   */
  async switchWal(): Promise<string> {
    return (await this.sql('SELECT pg_walfile_name(pg_switch_wal() - 1)', 'postgres')).trim();
  }

  /**
   * Writes every dirty page and moves the redo point to now (CHECKPOINT): a
   * copy of the data directory taken next recovers from here, replaying only
   * what was written since, instead of everything since the last scheduled
   * checkpoint (up to max_wal_size).
   */
  async checkpoint(): Promise<void> {
    await this.sql('CHECKPOINT', 'postgres', { timeoutMs: 600_000 });
  }

  /**
   * Ends the server processes of front-door connections (handed to the
   * server by descriptor, seen as 127.0.0.1 port 0) and waits up to 5 s for
   * each. For a hibernation, when the front door holds no connection: these
   * are queries whose client went away, which the server notices only when
   * it answers, and each holds a host socket that a checkpoint cannot save.
   */
  async endOrphans(): Promise<void> {
    await this.sql(
      `SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
       WHERE backend_type = 'client backend' AND client_addr = '127.0.0.1' AND client_port = 0`,
      'postgres',
    );
  }

  /** Runs a /bin/sh line as postgres (logs, diagnostics) and returns its stdout. */
  async shell(line: string, o: { user?: string; timeoutMs?: number } = {}): Promise<string> {
    return this.ok(
      sh(line, [], { user: o.user ?? 'postgres', timeoutMs: o.timeoutMs ?? 60_000 }),
      'shell command',
    );
  }

  /**
   * Sets the app role's password: Warren sends PostgreSQL its SCRAM secret.
   * PgBouncer looks secrets up at every login, so it takes the new one at once.
   */
  async setPassword(password: string): Promise<void> {
    await this.sql(alterPassword(scramSecret(password)), 'postgres');
  }

  /**
   * pg_basebackup (tar, gzip, WAL fetched into it, fast checkpoint) into
   * PG_STAGING/<name>/. The caller reads `path` and removes the directory.
   */
  async baseBackup(name: string): Promise<BaseBackup> {
    if (!NAME.test(name)) throw new WarrenError('INVALID_REQUEST', `invalid backup name ${name}`);
    const out = await this.asPostgres(BASE_BACKUP, [name], 'pg_basebackup');
    const field = (re: RegExp) => re.exec(out)?.[1];
    const start = /^START WAL LOCATION: ([0-9A-F]+\/[0-9A-F]+) \(file ([0-9A-F]{24})\)$/m.exec(out);
    const time = field(/^START TIME: (.+)$/m);
    const at = time ? parseLabelTime(time) : null;
    if (!start?.[1] || !start[2] || !at)
      throw new WarrenError(
        'DATABASE_COMMAND_FAILED',
        `unexpected backup_label: ${out.slice(-1000)}`,
      );
    return {
      path: `${PG_STAGING}/${name}/base.tar.gz`,
      startLsn: start[1],
      time: at,
      startWalFile: start[2],
      timeline: Number(field(/^START TIMELINE: (\d+)$/m) ?? 1),
      endLsn: field(/write-ahead log end point: ([0-9A-F]+\/[0-9A-F]+)/) ?? null,
    };
  }

  /**
   * Restores into an empty PG_DATA (INVALID_STATE otherwise): unpacks the
   * base backup, recovers from the WAL files in `walDir` up to `targetTime`
   * (then promotes) or to the end of the WAL there (then promotes), sets the
   * password, and starts: resolves once the server is out of recovery. The
   * caller may remove `backup` and `walDir` afterwards.
   */
  async restore(o: RestoreOptions): Promise<void> {
    checkArchiveTimeout(o.archiveTimeoutSeconds);
    for (const p of [o.backup, o.walDir])
      if (!PATH.test(p) || p.split('/').includes('..'))
        throw new WarrenError('INVALID_REQUEST', `invalid path in the sandbox: ${p}`);
    if (o.targetTime !== undefined && !/^[0-9A-Za-z:.+\- ]{1,64}$/.test(o.targetTime))
      throw new WarrenError('INVALID_RESTORE_TARGET', `invalid target time ${o.targetTime}`);
    const recovery = [
      '# A restore: gone once the server is promoted.',
      `restore_command = 'test -f "${o.walDir}/%f" && cp "${o.walDir}/%f" "%p"'`,
      ...(o.targetTime !== undefined
        ? [`recovery_target_time = '${o.targetTime}'`, `recovery_target_action = 'promote'`]
        : []),
      '',
    ].join('\n');
    await this.prepare();
    const args = [o.backup, warrenConf(o), PG_HBA, recovery];
    await this.asPostgres(RESTORE, args, 'restoring the base backup');
    await this.start({ timeoutSeconds: o.timeoutSeconds, password: o.password });
  }
}

/** backup_label's START TIME ("2025-05-20 12:34:56 UTC": the server logs in UTC) as ISO 8601. */
function parseLabelTime(s: string): string | null {
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) (?:UTC|GMT)$/.exec(s.trim());
  const t = m ? new Date(`${m[1]}T${m[2]}Z`) : new Date(s);
  return Number.isNaN(t.getTime()) ? null : t.toISOString();
}
