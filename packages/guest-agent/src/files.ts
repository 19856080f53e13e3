/**
 * File operations inside the sandbox. They run in the guest, so every path is
 * the sandbox's own view of its file system; the host never touches it.
 */
import { createReadStream } from 'node:fs';
import type { Stats } from 'node:fs';
import {
  lstat,
  stat,
  mkdir,
  readdir,
  readlink,
  rename,
  rm,
  rmdir,
  unlink,
  chmod,
  open,
  type FileHandle,
} from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import { Readable } from 'node:stream';
import { WarrenError } from '@warren/protocol/errors';
import type { FileInfo } from '@warren/protocol/guest';

export function checkPath(path: string | null | undefined): string {
  if (!path) throw new WarrenError('INVALID_PATH', 'path is required');
  if (!isAbsolute(path)) throw new WarrenError('INVALID_PATH', `path must be absolute: ${path}`);
  if (path.includes('\0')) throw new WarrenError('INVALID_PATH', 'path contains a NUL byte');
  return normalize(path);
}

function typeOf(st: Stats): FileInfo['type'] {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'dir';
  if (st.isSymbolicLink()) return 'symlink';
  return 'other';
}

export async function info(path: string): Promise<FileInfo> {
  const st = await lstat(path);
  const out: FileInfo = {
    name: basename(path) || '/',
    path,
    type: typeOf(st),
    size: st.size,
    mode: (st.mode & 0o7777).toString(8),
    mtime: st.mtime.toISOString(),
  };
  if (st.isSymbolicLink()) out.symlink_target = await readlink(path);
  return out;
}

export async function list(path: string): Promise<FileInfo[]> {
  const st = await lstat(path);
  if (!st.isDirectory()) throw new WarrenError('NOT_A_DIRECTORY', `${path} is not a directory`);
  const names = (await readdir(path)).sort();
  const out: FileInfo[] = [];
  for (const name of names) {
    // An entry can vanish between readdir and lstat; skip it rather than fail the listing.
    const item = await info(join(path, name)).catch(() => null);
    if (item) out.push(item);
  }
  return out;
}

/**
 * The size of a file about to be sent, after checking it is not a directory.
 * The size is sent ahead as content-length: a file that grows meanwhile (a log,
 * a counter rewritten) is read up to that size only, never past it into the
 * next HTTP response.
 */
export async function readableSize(path: string): Promise<number> {
  const st = await stat(path);
  if (st.isDirectory()) throw new WarrenError('IS_A_DIRECTORY', `${path} is a directory`);
  return st.size;
}

/** Opens a file for streaming out (without the native relay). */
export async function openRead(path: string): Promise<{ stream: Readable; size: number }> {
  const size = await readableSize(path);
  if (size === 0) return { stream: Readable.from([]), size: 0 };
  // Large reads: each one is a system call through the gVisor kernel.
  const stream = createReadStream(path, { highWaterMark: 1024 * 1024, end: size - 1 });
  return { stream, size };
}

/** Checks that a file can be written (creating parent directories) before any data is sent. */
export async function prepareWrite(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true }).catch(async (err: NodeJS.ErrnoException) => {
    // mkdir -p says EEXIST when a file stands where a parent directory should be.
    if (err.code !== 'EEXIST') throw err;
    throw new WarrenError('NOT_A_DIRECTORY', `a parent of ${path} is not a directory`);
  });
  const existing = await lstat(path).catch(() => null);
  if (existing?.isDirectory()) throw new WarrenError('IS_A_DIRECTORY', `${path} is a directory`);
}

/** Opens (creates or truncates) a file for an upload: refusals come before any byte moves. */
export function openWrite(path: string): Promise<FileHandle> {
  return open(path, 'w');
}

/**
 * Writes body into the opened file. A write that fails (a full disk) leaves
 * body readable and drains it, so the caller can still answer on its connection.
 */
export async function writeFrom(
  path: string,
  file: FileHandle,
  body: Readable,
  mode?: string,
): Promise<FileInfo> {
  const out = file.createWriteStream();
  try {
    await new Promise<void>((resolve, reject) => {
      out.on('error', (err) => {
        body.unpipe(out);
        body.resume();
        reject(err);
      });
      out.on('finish', resolve);
      body.on('error', reject);
      body.pipe(out);
    });
  } finally {
    if (!out.closed) out.destroy();
  }
  if (mode) await chmod(path, parseInt(mode, 8));
  return info(path);
}

export async function makeDir(path: string, parents: boolean): Promise<FileInfo> {
  const existing = await lstat(path).catch(() => null);
  if (existing) {
    if (existing.isDirectory() && parents) return info(path);
    throw new WarrenError('FILE_EXISTS', `${path} already exists`);
  }
  await mkdir(path, { recursive: parents });
  return info(path);
}

export async function remove(path: string, recursive: boolean): Promise<void> {
  if (path === '/') throw new WarrenError('INVALID_PATH', 'refusing to remove /');
  const st = await lstat(path);
  if (!st.isDirectory()) return unlink(path);
  if (recursive) return rm(path, { recursive: true, force: true });
  return rmdir(path);
}

export async function move(from: string, to: string): Promise<FileInfo> {
  await lstat(from);
  await mkdir(dirname(to), { recursive: true });
  await rename(from, to);
  return info(to);
}

/** Removes what a directory holds and keeps the directory (a missing one is fine). */
export async function emptyDir(path: string): Promise<void> {
  const names = await readdir(path).catch(() => [] as string[]);
  await Promise.all(names.map((n) => rm(join(path, n), { recursive: true, force: true })));
}
