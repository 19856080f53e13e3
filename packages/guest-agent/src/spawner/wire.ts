/**
 * The wire protocol to the native spawner helper (native/spawner.c): frames of
 * u32 LE payload length | u8 type | u32 LE id | payload, the message types,
 * the SPAWN payload, and the helper's errno and signal numbers as Node names.
 */
import { constants } from 'node:os';
import type { SpawnOptions } from './child';

export const REQ_SPAWN = 1;
export const REQ_STDIN = 2;
export const REQ_STDIN_CLOSE = 3;
export const REQ_SIGNAL = 4;
export const REQ_RELEASE = 5;
export const REQ_HOSTNAME = 6;
export const REQ_SPAWN_PTY = 7;
export const REQ_RESIZE = 8;
export const EV_STARTED = 0x11;
export const EV_SPAWN_FAILED = 0x12;
export const EV_STDOUT = 0x13;
export const EV_STDERR = 0x14;
export const EV_STDOUT_EOF = 0x15;
export const EV_STDERR_EOF = 0x16;
export const EV_EXITED = 0x17;
export const HEADER = 9;
/** Stdin is sent in frames of at most this size (the helper refuses frames over 64 MiB). */
export const STDIN_FRAME = 1024 * 1024;

/** Number to name; the first name wins (EAGAIN, not EWOULDBLOCK; SIGABRT, not SIGIOT), as in Node. */
function byNumber<T extends string>(table: Record<string, number>): Map<number, T> {
  const map = new Map<number, T>();
  for (const [name, n] of Object.entries(table)) if (!map.has(n)) map.set(n, name as T);
  return map;
}
const ERRNO_NAMES = byNumber<string>(constants.errno);
export const SIGNAL_NAMES = byNumber<NodeJS.Signals>(constants.signals);

/** Node's checks, so a bad argument fails as it did with child_process.spawn. */
function invalidArg(name: string, value: string, reason: string): Error {
  return Object.assign(
    new TypeError(`The argument '${name}' ${reason}. Received ${JSON.stringify(value)}`),
    { code: 'ERR_INVALID_ARG_VALUE' },
  );
}

/** The SPAWN payload: NUL-terminated cwd, cmd, argc, args..., envc, K=V...; throws like Node. */
export function spawnPayload({ cmd, args, env, cwd }: SpawnOptions): Buffer {
  if (typeof cmd !== 'string' || !Array.isArray(args)) {
    const message = 'The "file" and "args" arguments must be a string and an array';
    throw Object.assign(new TypeError(message), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  if (cmd.length === 0) throw invalidArg('file', cmd, 'cannot be empty');
  const envPairs: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined) envPairs.push(`${key}=${value}`);
  }
  const argv = args.map(String);
  const parts = [cwd, cmd, String(argv.length), ...argv, String(envPairs.length), ...envPairs];
  for (const p of parts) {
    if (p.includes('\0')) throw invalidArg('args', p, 'must be a string without null bytes');
  }
  return Buffer.from(parts.join('\0') + '\0', 'utf8');
}

/** The SPAWN_PTY payload: NUL-terminated cols and rows, then a SPAWN payload. */
export function ptySpawnPayload(options: SpawnOptions, size: TerminalSize): Buffer {
  return Buffer.concat([sizePayload(size), spawnPayload(options)]);
}

export interface TerminalSize {
  cols: number;
  rows: number;
}

/** The RESIZE payload (and the head of SPAWN_PTY's). */
export function sizePayload({ cols, rows }: TerminalSize): Buffer {
  return Buffer.from(`${cols}\0${rows}\0`, 'utf8');
}

export function errnoError(errno: number, { cmd, args }: SpawnOptions): NodeJS.ErrnoException {
  const code = ERRNO_NAMES.get(errno) ?? `E${errno}`;
  return Object.assign(new Error(`spawn ${cmd} ${code}`), {
    errno: -errno,
    code,
    syscall: `spawn ${cmd}`,
    path: cmd,
    spawnargs: [...args],
  });
}
