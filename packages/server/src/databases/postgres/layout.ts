/**
 * Where things are in a database sandbox (template `postgres-17`). The
 * template's own paths (the seed cluster, the archive script, the roles and
 * PgBouncer's auth function) are made by the host agent when it builds the
 * template: packages/host-agent/src/templates/postgres-root.ts.
 */
export const DB_TEMPLATE = 'postgres-17';
/** The database's volume, mounted (linked) here in the sandbox. */
export const PG_MOUNT = '/var/lib/warren-pg';
export const PG_DATA = '/var/lib/warren-pg/data';
/** WAL files waiting for the host: `<name>.tmp` while written, then `<name>` until taken. */
export const PG_OUTBOX = '/var/lib/warren-pg/archive-outbox';
/** Base backups and restore inputs. */
export const PG_STAGING = '/var/lib/warren-pg/staging';
/** A base backup the host unpacked onto a new volume for a restore (restore.ts). */
export const RESTORE_BASE_NAME = 'restore-base';
export const RESTORE_BASE = `${PG_MOUNT}/${RESTORE_BASE_NAME}`;
/** WAL files the host fetched from the archive onto a new volume for a restore (restore.ts). */
export const RESTORE_WAL_NAME = 'restore-wal';
export const RESTORE_WAL = `${PG_MOUNT}/${RESTORE_WAL_NAME}`;
/** The seed cluster the host copied onto a new volume (provision.ts newVolume `seeded`). */
export const SEEDED_DATA = `${PG_MOUNT}/data.seed`;
/** PostgreSQL on the sandbox's loopback (SCRAM over TCP, trust over the Unix socket). */
export const PG_PORT = 5432;
/** PgBouncer in transaction mode, in front of PG_PORT. */
export const PGBOUNCER_PORT = 6432;
/** The user's role, owner of the database of the same name. */
export const DB_ROLE = 'app';

/** While it exists, the archive_command does not wait for the host (a stop is under way). */
export const ARCHIVE_STOP = `${PG_MOUNT}/archive-stop`;
// Made by the template's root build (host-agent/src/templates/postgres-root.ts).
export { ARCHIVE_SCRIPT, NAP_FIFO, PG_BIN, SEED_DIR } from '@warren/host-agent';
export const SOCKET_DIR = '/var/run/postgresql';
/** The server's own socket there: local clients are trusted (the platform's SQL, see client.ts). */
export const PG_SOCKET = `${SOCKET_DIR}/.s.PGSQL.${PG_PORT}`;
/**
 * A second socket of the server, for the front door only: connections come
 * in by descriptor, and the server reads and writes the host socket itself
 * (guest-agent/native/handoff.c, loaded into the server by the START script).
 */
export const HANDOFF_DIR = `${SOCKET_DIR}/handoff`;
export const HANDOFF_SOCKET = `${HANDOFF_DIR}/.s.PGSQL.${PG_PORT}`;
/** PgBouncer's socket there (its `unix_socket_dir`, set by the START script). */
export const PGBOUNCER_HANDOFF_SOCKET = `${HANDOFF_DIR}/.s.PGSQL.${PGBOUNCER_PORT}`;
export const LOG_DIR = '/var/log/postgresql';
/** PgBouncer's configuration, written by every start (the template has the directory). */
export const PGBOUNCER_INI = `${SOCKET_DIR}/warren-pgbouncer.ini`;
export const PGBOUNCER_PID = `${SOCKET_DIR}/warren-pgbouncer.pid`;
/** Recovery settings of a restore, included from warren.conf while they exist. */
export const RECOVERY_CONF = 'warren-recovery.conf';
