/**
 * A private PostgreSQL cluster on this machine, from the server binaries of
 * the host's `postgresql` package (Debian 12: version 15): initdb into a
 * fresh directory, pg_ctl start on a Unix socket in that directory (and on a
 * loopback port if asked), stop and remove on stop(), on a failed start, and
 * at process exit. PostgreSQL refuses to run as root, so as root every
 * server command runs as the `postgres` user (runuser), who owns the
 * directory. The system's own cluster is never touched.
 *
 * Tests run their stores on it; a single-machine trial of the PostgreSQL
 * store can too (`warren cluster up` will start one the same way).
 */
import { execFile } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export interface LocalPostgresOptions {
  /** Parent of the cluster's directory (default /tmp: socket paths must stay short). */
  parent?: string;
  /** Also listen on this loopback address, with password (scram-sha-256) logins. */
  tcpHost?: string;
  /** The TCP port (default: a free one); with no tcpHost it only names the socket. */
  port?: number;
  /** Database created at start (default `warren`). */
  database?: string;
  /** fsync off: faster, and a crash of the machine loses the cluster (tests only). */
  unsafeNoFsync?: boolean;
  /** The server binaries (default: WARREN_PG_BIN, or the newest /usr/lib/postgresql/<n>/bin). */
  binDir?: string;
}

export interface LocalPostgres {
  /** URL of the start database: a Unix socket URL, or the TCP one with tcpHost. */
  url: string;
  /** The same database over the Unix socket (trusted: the directory is the server user's alone). */
  socketUrl: string;
  dir: string;
  port: number;
  /** The `postgres` superuser's password (TCP logins). */
  password: string;
  /** Creates a database and returns its URL (same transport as `url`). */
  createDatabase(name: string): Promise<string>;
  /** Restarts the server (fast shutdown: open connections are cut). */
  restart(): Promise<void>;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

/** The newest server binaries installed by Debian's postgresql packages. */
export function findPostgresBin(env: NodeJS.ProcessEnv = process.env): string {
  if (env.WARREN_PG_BIN) return env.WARREN_PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions[0])
    throw new Error(
      'PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql, or run scripts/setup.sh; or set WARREN_PG_BIN)',
    );
  return join(root, versions[0], 'bin');
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function ids(user: string): Promise<{ uid: number; gid: number }> {
  try {
    const uid = Number((await run('id', ['-u', user])).stdout.trim());
    const gid = Number((await run('id', ['-g', user])).stdout.trim());
    return { uid, gid };
  } catch {
    throw new Error(
      `PostgreSQL does not run as root, and there is no ${user} user to run it as (apt-get install postgresql creates one)`,
    );
  }
}

export async function startLocalPostgres(
  options: LocalPostgresOptions = {},
): Promise<LocalPostgres> {
  const bin = options.binDir ?? findPostgresBin();
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? await ids('postgres') : null;
  // As root, server commands run as postgres; the environment is not passed on.
  const server = (cmd: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args])
      : run(join(bin, cmd), args);

  const dir = mkdtempSync(join(options.parent ?? '/tmp', 'wpg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const password = randomBytes(18).toString('base64url');
  const port = options.port ?? (await freePort(options.tcpHost ?? '127.0.0.1'));
  const database = options.database ?? 'warren';
  let started = false;

  const stopServer = async () => {
    if (!started) return;
    await server('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w', '-t', '60']).catch(() => {
      // Already gone: nothing to stop.
    });
    started = false;
  };
  // The process ends without stop(): end the server at once and remove its files.
  const onExit = () => {
    try {
      const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch {
      // not running
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const cleanUp = async () => {
    process.off('exit', onExit);
    await stopServer();
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const pwfile = join(dir, 'pwfile');
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
    if (owner) {
      chownSync(dir, owner.uid, owner.gid);
      chownSync(pwfile, owner.uid, owner.gid);
    }
    await server('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      `--pwfile=${pwfile}`,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '--encoding=UTF8',
      '--no-locale',
      '--no-instructions',
    ]);
    rmSync(pwfile);
    const settings = [
      `port = ${port}`,
      `unix_socket_directories = '${dir}'`,
      `listen_addresses = '${options.tcpHost ?? ''}'`,
      'max_connections = 100',
      ...(options.unsafeNoFsync ? ['fsync = off', 'synchronous_commit = off'] : []),
    ];
    writeFileSync(
      join(data, 'postgresql.conf'),
      `${readFileSync(join(data, 'postgresql.conf'), 'utf8')}\n# Warren\n${settings.join('\n')}\n`,
    );
    started = true;
    await server('pg_ctl', ['start', '-D', data, '-l', log, '-w', '-t', '60']);
    const socketUrl = (db: string) => `postgres://postgres@localhost:${port}/${db}?host=${dir}`;
    const tcpUrl = (db: string) =>
      `postgres://postgres:${password}@${options.tcpHost}:${port}/${db}`;
    const urlOf = (db: string) => (options.tcpHost ? tcpUrl(db) : socketUrl(db));
    const createDatabase = async (name: string) => {
      const client = new pg.Client({ connectionString: socketUrl('postgres') });
      await client.connect();
      try {
        await client.query(`create database ${pg.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return urlOf(name);
    };
    await createDatabase(database);
    return {
      url: urlOf(database),
      socketUrl: socketUrl(database),
      dir,
      port,
      password,
      createDatabase,
      restart: async () => {
        await server('pg_ctl', ['restart', '-D', data, '-l', log, '-m', 'fast', '-w', '-t', '60']);
      },
      stop: cleanUp,
    };
  } catch (err) {
    const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-10).join('\n') : '';
    await cleanUp();
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(
      `local PostgreSQL did not start: ${stderr || (err instanceof Error ? err.message : String(err))}${tail ? `\n${tail}` : ''}`,
    );
  }
}
