/**
 * The shell scripts GuestPostgres runs in a database sandbox (`sh -c`, START
 * and STOP with bash), with values as positional arguments or stdin, never
 * spliced into the text. Each does one step in one exec, so a step is one
 * round trip to the guest; they use shell builtins where they can, since
 * every process started in a sandbox costs a few milliseconds or more.
 */
import {
  ARCHIVE_STOP,
  HANDOFF_DIR,
  LOG_DIR,
  NAP_FIFO,
  PGBOUNCER_INI,
  PGBOUNCER_PID,
  PGBOUNCER_PORT,
  PG_BIN,
  PG_DATA,
  PG_MOUNT,
  PG_OUTBOX,
  PG_STAGING,
  RECOVERY_CONF,
  SEED_DIR,
  SOCKET_DIR,
} from './layout';
import { GUEST_HANDOFF_LIBRARY } from '@warren/protocol/guest';

/** Exit code of a script that refuses because of the state it found (INVALID_STATE). */
export const REFUSED = 65;

const COMMON = `
B=${PG_BIN}; D=${PG_DATA}; M=${PG_MOUNT}; S=${SOCKET_DIR}
# alive <pid file> <comm>: the process of the pid file runs and is that program. A
# pid file left by a sandbox that died can name a pid another process has now.
alive() {
  p=; c=
  read -r p 2>/dev/null <"$1"
  [ -n "$p" ] && read -r c 2>/dev/null <"/proc/$p/comm" && [ "$c" = "$2" ]
}
logs() {
  tail -n 20 "$D/log/startup.log" 2>/dev/null
  f=$(ls -t "$D"/log/postgresql-*.log 2>/dev/null | head -n1)
  [ -z "$f" ] || tail -n 30 "$f"
}
fail() { echo "$1" >&2; logs >&2; exit 1; }
refuse() { echo "$1" >&2; exit ${REFUSED}; }
empty_data() { [ ! -e "$D" ] || [ -z "$(ls -A "$D")" ]; }
# put <file> <text>: replaces a file through a rename, unless it holds that text
# already (read is a builtin; every process started costs milliseconds)
put() {
  local c=
  IFS= read -r -d '' c 2>/dev/null <"$1" || :
  [ "$c" = "$2" ] || { printf '%s' "$2" >"$1.tmp" && mv -f "$1.tmp" "$1"; }
}
`;

/**
 * As root, for a new data directory (init, restore): the volume's owner and
 * layout, and staged restore inputs readable by postgres. The template has
 * the socket and log directories, so a start needs none of this.
 */
export const PREPARE = `set -eu
${COMMON}
[ -d "$M/" ] || refuse "$M is missing: the database's volume is not attached there"
chown postgres:postgres "$M/"
chmod 0700 "$M/"
install -d -o postgres -g postgres -m 0700 ${PG_OUTBOX} ${PG_STAGING}
chown -R postgres:postgres ${PG_STAGING}
install -d -o postgres -g postgres -m 2775 "$S"
install -d -o postgres -g postgres -m 0755 ${LOG_DIR}
`;

/** As postgres: $1 warren.conf, $2 pg_hba.conf. */
export const INIT = `set -eu
${COMMON}
empty_data || refuse "refusing to initialise: $D is not empty"
[ -f ${SEED_DIR}/PG_VERSION ] || refuse "no seed cluster at ${SEED_DIR}: not the postgres template?"
rm -rf "$D.init"
# The host may have put the seed on the volume already (data.seed): far faster
# than copying it here, through the sandbox's file system.
if [ -f "$D.seed/PG_VERSION" ]; then mv "$D.seed" "$D.init"; else cp -a ${SEED_DIR} "$D.init"; fi
chmod 0700 "$D.init"
mkdir -p "$D.init/log"
put "$D.init/warren.conf" "$1"
put "$D.init/pg_hba.conf" "$2"
[ ! -e "$D" ] || rmdir "$D"
mv "$D.init" "$D"
sync "$D" "$M/" 2>/dev/null || true
`;

const CONFIGURE_BODY = `[ -f "$D/PG_VERSION" ] || refuse "no database cluster in $D"
put "$D/warren.conf" "$1" && put "$D/pg_hba.conf" "$2" || fail "cannot write the settings"
[ -d "$D/log" ] || mkdir -p "$D/log"
if alive "$D/postmaster.pid" postgres; then
  "$B/pg_ctl" reload -D "$D" -s || fail "cannot reload the settings"
fi
`;

/** As postgres: $1 warren.conf, $2 pg_hba.conf; reloads a running server. */
export const CONFIGURE = `set -eu
${COMMON}
${CONFIGURE_BODY}`;

/**
 * As postgres, with bash: $1 seconds to wait, $2 PgBouncer's configuration.
 * Starts the server unless it runs (crash recovery or a restore's archive
 * recovery happen here) and PgBouncer unless it runs, side by side; waits
 * until the server answers out of recovery, drops a finished restore's
 * settings, then waits until PgBouncer listens.
 *
 * The server is started directly, not with `pg_ctl start -w`: pg_ctl first
 * parses the configuration in a server process of its own and then polls in
 * 100 ms steps, which costs more than half a second in a sandbox. Here the
 * wait reads the status line of postmaster.pid with shell builtins.
 */
const START_BODY = `# A process of a server that is not running (any more): the postmaster is not alive.
old_server() {
  for c in /proc/[0-9]*/comm; do
    n=
    read -r n 2>/dev/null <"$c"
    [ "$n" = postgres ] && return 0
  done
  return 1
}
# The postmaster's status into $st (postmaster.pid, line 8): starting, stopping, ready or standby.
status() {
  local -a l=()
  mapfile -t l 2>/dev/null <"$D/postmaster.pid"
  st=\${l[7]:-}
}
# nap <seconds>: a read that times out on a FIFO nobody writes to, instead of a
# sleep process for every turn of the wait. The template's root has the FIFO
# (mkfifo is a process too); a root made before that gets it here, once.
f=${NAP_FIFO}
if { [ -p "$f" ] || mkfifo -m 0600 "$f" 2>/dev/null; } && exec 9<>"$f"; then
  nap() { read -r -t "$1" -u 9 _ 2>/dev/null || :; }
else
  nap() { sleep "$1"; }
fi
[ -f "$D/PG_VERSION" ] || refuse "no database cluster in $D"
[ -d "$S" ] && [ -w "$S" ] || refuse "$S is missing: not the postgres template?"
# Every process started here costs milliseconds (far more on a busy host): one rm
# for all, and none when nothing is left over (a new database, a branch).
stale=(${ARCHIVE_STOP})
alive "$D/postmaster.pid" postgres && server=up || stale+=("$D/postmaster.pid")
alive ${PGBOUNCER_PID} pgbouncer && bouncer=up || stale+=(${PGBOUNCER_PID})
if [ -z "\${server:-}" ]; then
  # After a crash, processes of the old server may still be on their way out; the
  # new one would refuse their shared memory while they hold it.
  while old_server && [ "$SECONDS" -lt 10 ]; do nap 0.1; done
fi
for x in "\${stale[@]}"; do [ ! -e "$x" ] || { rm -f "\${stale[@]}"; break; }; done
archive_recovery=
[ ! -f "$D/recovery.signal" ] && [ ! -f "$D/standby.signal" ] || archive_recovery=y
# The front door hands its connections to the server and to PgBouncer on
# sockets of their own in ${HANDOFF_DIR}, through the guest bundle's library
# (LD_PRELOAD, for these two only); without the library there are no such
# sockets and those connections come over loopback TCP.
sockets=$S handoff=
if [ -f ${GUEST_HANDOFF_LIBRARY} ]; then
  [ -d ${HANDOFF_DIR} ] || mkdir -m 0700 ${HANDOFF_DIR}
  sockets+=",${HANDOFF_DIR}" handoff=y
  export LD_PRELOAD=${GUEST_HANDOFF_LIBRARY} WARREN_HANDOFF_DIR=${HANDOFF_DIR}
fi
if [ -z "\${server:-}" ]; then
  [ -d "$D/log" ] || mkdir -p "$D/log"
  # Included by warren.conf: PostgreSQL logs a missing include at every reload.
  [ -e "$D/${RECOVERY_CONF}" ] || : >"$D/${RECOVERY_CONF}"
  # In a session of its own, as pg_ctl does: it outlives this script.
  setsid "$B/postgres" -D "$D" -c "unix_socket_directories=$sockets" \
    </dev/null >"$D/log/startup.log" 2>&1 &
  pm=$!
fi
if [ -z "\${bouncer:-}" ]; then
  printf '%s' "$2" >${PGBOUNCER_INI}
  # A later setting wins in PgBouncer's file.
  [ -z "$handoff" ] || printf 'unix_socket_dir = %s\n' ${HANDOFF_DIR} >>${PGBOUNCER_INI}
  ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  /usr/sbin/pgbouncer -d -q ${PGBOUNCER_INI} </dev/null >/dev/null 2>&1 ||
    { tail -n 20 ${LOG_DIR}/pgbouncer.log >&2; fail "pgbouncer did not start"; }
fi
unset LD_PRELOAD WARREN_HANDOFF_DIR
until status; [[ $st == ready* || $st == standby* ]]; do
  [ -z "\${pm:-}" ] || kill -0 "$pm" 2>/dev/null || fail "postgres did not start"
  [ "$SECONDS" -lt "$1" ] || fail "postgres did not start within $1 s"
  nap 0.02
done
# After crash recovery (no signal file at the start) "ready" means out of
# recovery; an archive recovery (a restore) accepts read-only connections
# first, so there the server is asked.
[[ $st == ready* && -z $archive_recovery ]] ||
until [ "$("$B/psql" -X -At -h "$S" -d postgres -c 'select pg_is_in_recovery()' 2>/dev/null)" = f ]; do
  alive "$D/postmaster.pid" postgres || fail "postgres stopped before it was ready"
  [ "$SECONDS" -lt "$1" ] || fail "postgres was not out of recovery within $1 s"
  nap 0.1
done
# A restore's recovery settings are emptied once it is over.
if [ -s "$D/${RECOVERY_CONF}" ] && [ ! -f "$D/recovery.signal" ]; then
  : >"$D/${RECOVERY_CONF}"
  "$B/pg_ctl" reload -D "$D" -s
fi
until : 2>/dev/null <>/dev/tcp/127.0.0.1/${PGBOUNCER_PORT}; do
  [ "$SECONDS" -lt "$1" ] || { tail -n 20 ${LOG_DIR}/pgbouncer.log >&2; fail "pgbouncer is not listening"; }
  nap 0.05
done
`;

export const START = `set -u
${COMMON}
${START_BODY}`;

/** As postgres, with bash: CONFIGURE ($3 warren.conf, $4 pg_hba.conf), then START ($1, $2) in one exec. */
export const CONFIGURE_START = `set -u
${COMMON}
configure() {
${CONFIGURE_BODY}}
configure "$3" "$4"
${START_BODY}`;

/** As postgres, with bash: $1 seconds to wait. PgBouncer at once, then a fast shutdown of the server. */
export const STOP = `set -u
${COMMON}
if alive ${PGBOUNCER_PID} pgbouncer; then
  kill -QUIT "$p" 2>/dev/null
  while alive ${PGBOUNCER_PID} pgbouncer && [ "$SECONDS" -lt 5 ]; do sleep 0.05; done
fi
if alive "$D/postmaster.pid" postgres; then
  # The archive_command gives up at once instead of waiting for the host.
  : >${ARCHIVE_STOP}
  "$B/pg_ctl" stop -D "$D" -m fast -w -t "$1" -s || fail "postgres did not stop"
fi
`;

/** As postgres: whether the server answers out of recovery and PgBouncer runs. */
export const READY = `${COMMON}
[ "$("$B/psql" -X -At -h "$S" -d postgres -c 'select pg_is_in_recovery()' 2>/dev/null)" = f ] &&
  alive ${PGBOUNCER_PID} pgbouncer
`;

/**
 * As postgres: $1 the backup's name. pg_basebackup into staging/<name>/, then
 * prints its start and end points (from pg_basebackup's log) and its backup_label.
 */
export const BASE_BACKUP = `set -eu
${COMMON}
dir=${PG_STAGING}/$1
rm -rf "$dir"
mkdir -p "$dir"
if ! "$B/pg_basebackup" -h "$S" -U postgres -D "$dir" -Ft -Z gzip:1 -X fetch -c fast -v 2>"$dir.log"; then
  cat "$dir.log" >&2
  rm -rf "$dir" "$dir.log"
  exit 1
fi
grep -E 'write-ahead log (start|end) point' "$dir.log" || true
rm -f "$dir.log"
tar -xzOf "$dir/base.tar.gz" --occurrence=1 backup_label
`;

/**
 * As postgres: $1 base.tar.gz, $2 warren.conf, $3 pg_hba.conf, $4 the recovery
 * settings. Unpacks into an empty data directory (through another name) with
 * recovery.signal; start() recovers.
 */
export const RESTORE = `set -eu
${COMMON}
empty_data || refuse "refusing to restore: $D is not empty"
rm -rf "$D.restore"
if [ -d "$1" ]; then
  # Unpacked by the host onto this volume: moved into place.
  mv "$1" "$D.restore"
else
  [ -f "$1" ] || refuse "no base backup at $1"
  mkdir -m 0700 "$D.restore"
  tar -xzf "$1" -C "$D.restore"
fi
[ -f "$D.restore/PG_VERSION" ] || fail "$1 is not a base backup of a cluster"
rm -f "$D.restore/postmaster.pid" "$D.restore/postmaster.opts" "$D.restore/standby.signal"
rm -rf "$D.restore/log"
mkdir -p "$D.restore/log"
put "$D.restore/warren.conf" "$2"
put "$D.restore/pg_hba.conf" "$3"
put "$D.restore/${RECOVERY_CONF}" "$4"
: >"$D.restore/recovery.signal"
[ ! -e "$D" ] || rmdir "$D"
mv "$D.restore" "$D"
sync "$D" "$M/" 2>/dev/null || true
`;
