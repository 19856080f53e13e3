/**
 * The configuration Warren owns in a database sandbox, rewritten by
 * `configure()` (so a new release's settings reach existing databases):
 *
 *   <data>/warren.conf         included at the end of postgresql.conf (the seed's)
 *   <data>/pg_hba.conf         local trust, loopback TCP with SCRAM, nothing else
 *   /run/postgresql/warren-pgbouncer.ini  written by every start (the sandbox's root)
 */
import {
  ARCHIVE_SCRIPT,
  DB_ROLE,
  PGBOUNCER_PID,
  PGBOUNCER_PORT,
  PG_PORT,
  RECOVERY_CONF,
  SOCKET_DIR,
} from './layout';

/** Server settings for a sandbox of 1 GiB and up. */
export function warrenConf(o: { archiveTimeoutSeconds: number }): string {
  const settings: Array<[string, string | number]> = [
    ['listen_addresses', `'127.0.0.1,::1'`],
    ['port', PG_PORT],
    // unix_socket_directories is not here: the START script gives it on the command
    // line (with the handoff directory where the guest has one), and a different
    // value here would log "contains errors" at every reload.
    ['max_connections', 100],
    ['superuser_reserved_connections', 3],
    ['shared_buffers', `'128MB'`],
    ['effective_cache_size', `'512MB'`],
    ['maintenance_work_mem', `'64MB'`],
    // Not posix: /dev/shm in a sandbox is a 64 MiB tmpfs, too small for parallel hash joins.
    ['dynamic_shared_memory_type', 'sysv'],
    ['huge_pages', 'off'],
    // Crash recovery and restores begin by syncing the data directory: one syncfs
    // instead of an fsync of each of its files through the sandbox's file proxy.
    ['recovery_init_sync_method', 'syncfs'],
    ['password_encryption', `'scram-sha-256'`],
    ['wal_level', 'replica'],
    ['max_wal_size', `'1GB'`],
    ['min_wal_size', `'80MB'`],
    ['archive_mode', 'on'],
    ['archive_command', `'${ARCHIVE_SCRIPT} %p %f'`],
    ['archive_timeout', o.archiveTimeoutSeconds],
    ['timezone', `'UTC'`],
    ['log_timezone', `'UTC'`],
    // The log stays in <data>/log: one file per weekday, overwritten a week later.
    ['logging_collector', 'on'],
    ['log_directory', `'log'`],
    ['log_filename', `'postgresql-%a.log'`],
    ['log_truncate_on_rotation', 'on'],
    ['log_rotation_age', `'1d'`],
    ['log_rotation_size', 0],
    ['log_line_prefix', `'%m [%p] %q%u@%d '`],
  ];
  return [
    '# Written by Warren before every start: edits here are lost. Settings made',
    '# with ALTER SYSTEM (postgresql.auto.conf) still come after these.',
    ...settings.map(([k, v]) => `${k} = ${v}`),
    // Empty but for a restore's recovery settings (a missing file is logged at every reload).
    `include_if_exists = '${RECOVERY_CONF}'`,
    '',
  ].join('\n');
}

/** Processes in the sandbox over the Unix socket; SCRAM on loopback TCP; nothing else. */
export const PG_HBA = [
  '# Written by Warren: edits here are lost.',
  '# TYPE  DATABASE     USER  ADDRESS        METHOD',
  'local   all          all                  trust',
  'local   replication  all                  trust',
  'host    all          all   127.0.0.1/32   scram-sha-256',
  'host    all          all   ::1/128        scram-sha-256',
  '',
].join('\n');

/**
 * PgBouncer: transaction pooling. Clients authenticate with SCRAM against the
 * secret PostgreSQL stores (auth_query through a SECURITY DEFINER function that
 * the template's seed has, run as the role `pgbouncer` over the Unix socket),
 * so a new password counts at once; superusers cannot log in through it.
 */
export const PGBOUNCER_CONF = [
  '; Written by Warren before every start: edits here are lost.',
  '[databases]',
  `* = host=${SOCKET_DIR} port=${PG_PORT}`,
  '',
  '[pgbouncer]',
  'listen_addr = 127.0.0.1',
  `listen_port = ${PGBOUNCER_PORT}`,
  'unix_socket_dir =',
  'auth_type = scram-sha-256',
  'auth_user = pgbouncer',
  'auth_dbname = postgres',
  'auth_query = SELECT usename, passwd FROM pgbouncer.get_auth($1)',
  'pool_mode = transaction',
  'max_prepared_statements = 200',
  'max_client_conn = 1000',
  'default_pool_size = 20',
  'ignore_startup_parameters = extra_float_digits',
  `pidfile = ${PGBOUNCER_PID}`,
  'logfile = /var/log/postgresql/pgbouncer.log',
  'log_connections = 0',
  'log_disconnections = 0',
  '',
].join('\n');

/** A string as an SQL literal (standard_conforming_strings is on). */
export function sqlLiteral(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/** The statement that gives the app role a (SCRAM) password. */
export function alterPassword(secret: string): string {
  return `ALTER ROLE ${DB_ROLE} PASSWORD ${sqlLiteral(secret)};\n`;
}
