/**
 * The root of the `postgres-17` template, after debootstrap: what Warren's
 * managed databases (packages/server/src/databases/postgres.ts) count on.
 *
 * - Debian's own cluster (17/main) is dropped and none is made again: nothing
 *   in the root starts PostgreSQL by itself.
 * - A seed cluster made here with initdb, at SEED_DIR: a new database copies
 *   it instead of running initdb in the sandbox. It has the role `app` (LOGIN,
 *   CREATEDB, CREATEROLE, not superuser) owning the database `app`, the role
 *   `pgbouncer` and the function `pgbouncer.get_auth` (database `postgres`)
 *   that PgBouncer's auth_query calls, and its postgresql.conf includes
 *   `warren.conf`, which the server writes.
 * - pgvector is marked trusted, so a role that may create objects in a
 *   database (the owner, `app`) can `CREATE EXTENSION vector` without being
 *   superuser.
 * - /usr/local/bin/warren-pg-archive, the archive_command: it hands each WAL
 *   file to the host through an outbox on the database's volume.
 *
 * /var/lib/warren-pg, where the volume is mounted, does not exist in the root.
 */
import { spawn } from 'node:child_process';
import { appendFile, chmod, chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import type { Progress } from './rootfs';

// Where this root puts what a database's scripts use (the server's
// databases/postgres/layout.ts takes these from here).
export const PG_BIN = '/usr/lib/postgresql/17/bin';
export const SEED_DIR = '/usr/local/share/warren-pg/seed';
/** A FIFO nobody writes to: the START script's waits read it with a timeout. */
export const NAP_FIFO = '/usr/local/share/warren-pg/nap';
export const ARCHIVE_SCRIPT = '/usr/local/bin/warren-pg-archive';

/**
 * Runs a command on the host with `o.stdin` as its input; throws with its
 * output when it fails. A command that exits without reading its input (as
 * mkfifo does) fails or not by its exit code, never by an EPIPE.
 */
export function run(cmd: string, args: string[], o: { stdin?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', HOME: '/var/lib/postgresql' },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
    child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
    child.once('error', (err) =>
      reject(new WarrenError('RUNTIME_ERROR', `cannot run ${cmd}: ${err.message}`)),
    );
    child.once('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(
            new WarrenError(
              'RUNTIME_ERROR',
              `${cmd} ${args.join(' ')} failed (exit ${code}): ${out.slice(-2000)}`,
            ),
          ),
    );
    child.stdin.on('error', () => undefined); // EPIPE: the exit code tells
    child.stdin.end(o.stdin ?? '');
  });
}

/** uid and gid of a user of the root, from its own /etc/passwd. */
async function userOf(rootfs: string, name: string): Promise<{ uid: number; gid: number }> {
  const passwd = await readFile(join(rootfs, 'etc/passwd'), 'utf8');
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined)
      return { uid: Number(uid), gid: Number(gid) };
  }
  throw new WarrenError('RUNTIME_ERROR', `no user ${name} in the template root`);
}

/** Runs a program of the root, in it, as the postgres user. */
function asPostgres(
  rootfs: string,
  pg: { uid: number; gid: number },
  args: string[],
  stdin?: string,
): Promise<string> {
  return run('chroot', [`--userspec=${pg.uid}:${pg.gid}`, rootfs, ...args], { stdin });
}

/** What the seed has besides initdb's cluster (run in single-user mode, one statement a line). */
const SEED_SQL = [
  'CREATE ROLE app LOGIN CREATEDB CREATEROLE',
  'CREATE DATABASE app OWNER app',
  'CREATE ROLE pgbouncer LOGIN',
  'CREATE SCHEMA pgbouncer',
  'GRANT USAGE ON SCHEMA pgbouncer TO pgbouncer',
  // PgBouncer's auth_query: the stored SCRAM secret of a login role that is not a superuser.
  'CREATE FUNCTION pgbouncer.get_auth(p_usename text) RETURNS TABLE(usename name, passwd text)' +
    ' LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog' +
    ' AS $$SELECT usename, passwd FROM pg_catalog.pg_shadow WHERE usename = p_usename AND NOT usesuper$$',
  'REVOKE ALL ON FUNCTION pgbouncer.get_auth(text) FROM PUBLIC',
  'GRANT EXECUTE ON FUNCTION pgbouncer.get_auth(text) TO pgbouncer',
].join('\n');

const ARCHIVE_SCRIPT_TEXT = `#!/bin/sh
# Warren: PostgreSQL's archive_command, as
#   archive_command = '${ARCHIVE_SCRIPT} %p %f'
# The sandbox holds no storage credentials: the host archives. This copies the
# WAL file (segment, history, .partial or .backup file) into the outbox on the
# database's volume as <name>.tmp, fsyncs it, renames it to <name>, and waits
# until the host has stored and removed it. Exit 0 once it is gone; 1 if it is
# still there after 60 s, or at once while the server is being stopped (the
# file /var/lib/warren-pg/archive-stop exists): PostgreSQL keeps the WAL file
# and tries again later, and the host may still take the copy in the outbox.
set -eu
[ $# -eq 2 ] || { echo "usage: warren-pg-archive <path> <name>" >&2; exit 2; }
src=$1
name=$2
outbox=/var/lib/warren-pg/archive-outbox
case $name in
  '' | */* | .*) echo "warren-pg-archive: bad file name: $name" >&2; exit 2 ;;
esac
mkdir -p "$outbox"
cp "$src" "$outbox/$name.tmp"
sync "$outbox/$name.tmp"
mv -f "$outbox/$name.tmp" "$outbox/$name"
sync "$outbox"
deadline=$(($(date +%s) + 60))
while [ -e "$outbox/$name" ]; do
  if [ -e /var/lib/warren-pg/archive-stop ]; then
    echo "warren-pg-archive: stopping; $name is left for later" >&2
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "warren-pg-archive: the host did not take $name within 60 s" >&2
    exit 1
  fi
  sleep 0.05
done
`;

/** The post-build step of `postgres-17` (see the top of this file). */
export async function finishPostgresRoot(rootfs: string, progress: Progress): Promise<void> {
  const at = (p: string) => join(rootfs, p);
  const pg = await userOf(rootfs, 'postgres');

  progress('dropping the default cluster');
  await rm(at('etc/postgresql/17'), { recursive: true, force: true });
  await rm(at('var/lib/postgresql/17'), { recursive: true, force: true });
  await appendFile(
    at('etc/postgresql-common/createcluster.conf'),
    '\n# Warren: no cluster is made when a version is installed.\ncreate_main_cluster = false\n',
  );
  await rm(at('var/lib/warren-pg'), { recursive: true, force: true });

  const control = at('usr/share/postgresql/17/extension/vector.control');
  if (!/^\s*trusted\s*=\s*true/m.test(await readFile(control, 'utf8'))) {
    progress('marking pgvector trusted');
    await appendFile(
      control,
      '# Warren: a database owner may create it without being superuser.\ntrusted = true\n',
    );
  }

  const dirs = [
    'run/postgresql',
    'run/postgresql/handoff',
    'var/log/postgresql',
    'usr/local/share/warren-pg',
  ];
  for (const dir of dirs) {
    await mkdir(at(dir), { recursive: true });
    await chown(at(dir), pg.uid, pg.gid);
  }
  await chmod(at('run/postgresql'), 0o2775);
  // Where the front door hands connections to the server (see the START script).
  await chmod(at('run/postgresql/handoff'), 0o700);
  // The START script's waits read this FIFO with a timeout (a sleep would be a process each time).
  await run('mkfifo', ['-m', '0600', at(NAP_FIFO.slice(1))]);
  await chown(at(NAP_FIFO.slice(1)), pg.uid, pg.gid);

  progress('making the seed cluster (initdb)');
  await asPostgres(rootfs, pg, [
    `${PG_BIN}/initdb`,
    `--pgdata=${SEED_DIR}`,
    '--username=postgres',
    '--encoding=UTF8',
    '--locale=C.UTF-8',
    '--locale-provider=builtin',
    '--builtin-locale=C.UTF-8',
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '--data-checksums',
    '--no-instructions',
  ]);
  await asPostgres(
    rootfs,
    pg,
    [
      `${PG_BIN}/postgres`,
      '--single',
      '-D',
      SEED_DIR,
      '-c',
      'exit_on_error=true',
      '-c',
      'dynamic_shared_memory_type=mmap',
      'postgres',
    ],
    `${SEED_SQL}\n`,
  );
  await appendFile(
    at(`${SEED_DIR.slice(1)}/postgresql.conf`),
    "\n# Warren's settings, rewritten by the server on every start.\ninclude 'warren.conf'\n",
  );

  await writeFile(at(ARCHIVE_SCRIPT.slice(1)), ARCHIVE_SCRIPT_TEXT, { mode: 0o755 });
  await chmod(at(ARCHIVE_SCRIPT.slice(1)), 0o755);
}
