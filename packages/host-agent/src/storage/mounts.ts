/**
 * Size-limited file systems on the host: a sparse file formatted as ext4 and
 * loop-mounted. Its size is the limit: a write past it fails with ENOSPC, and
 * it never takes more of the host's disk than that. Used for each sandbox's
 * writable layer (disk_mb) and for each volume. The tools are util-linux's
 * mount/umount and e2fsprogs' mkfs.ext4 (scripts/setup.sh installs them).
 */
import { execFile, spawn } from 'node:child_process';
import { chown, mkdir, readFile, readdir, stat, truncate, writeFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { WarrenError } from '@warren/protocol';

const run = promisify(execFile);

async function tool(cmd: string, args: string[]): Promise<void> {
  try {
    await run(cmd, args, { timeout: 60_000 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new WarrenError(
      'RUNTIME_ERROR',
      `${cmd} ${args.join(' ')} failed: ${(e.stderr || e.message).trim().slice(-500)}`,
    );
  }
}

/**
 * Creates a sparse ext4 image of sizeMb. No journal: the sandbox layer is
 * scratch space, and a volume is only ever mounted by this host's kernel.
 * `-m 0` leaves no blocks reserved for root (everyone in a sandbox is root).
 */
export async function makeExt4Image(
  image: string,
  sizeMb: number,
  o: { journal?: boolean } = {},
): Promise<void> {
  await writeFile(image, '');
  await truncate(image, sizeMb * 1024 * 1024);
  const features = o.journal ? [] : ['-O', '^has_journal'];
  await tool('mkfs.ext4', ['-q', '-F', '-m', '0', ...features, '-E', 'nodiscard', image]);
}

/** Copies a directory tree, owners, modes and times kept (`cp -a`). */
export async function copyTree(from: string, to: string): Promise<void> {
  await tool('cp', ['-a', '--', from, to]);
}

/**
 * Unpacks a gzipped tar stream into a new directory `to` (owners and modes
 * as the tar says; as root); `to` then takes the owner of the tar's first
 * entry and mode 0700.
 */
export async function untarInto(body: Readable, to: string): Promise<void> {
  await mkdir(to, { mode: 0o700 });
  const tar = spawn('tar', ['-xzf', '-', '--numeric-owner', '-p', '-C', to], {
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  tar.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    tar.once('error', reject);
    tar.once('close', resolve);
  });
  await pipeline(body, tar.stdin).catch(() => undefined); // tar's exit says what went wrong
  const code = await exited;
  if (code !== 0)
    throw new WarrenError('INTERNAL', `tar -x into ${to} failed (${code}): ${stderr.trim()}`);
  const first = (await readdir(to))[0];
  if (first) {
    const { uid, gid } = await stat(`${to}/${first}`);
    await chown(to, uid, gid);
  }
}

/** How a volume is copied: sharing blocks with it (a reflink), or block by block. */
export type CloneMode = 'reflink' | 'copy';

/**
 * Copies a mounted image as of one instant: the file system is frozen
 * (fsfreeze flushes it and makes writers wait), the image cloned (`reflink`:
 * its blocks shared, milliseconds whatever its size) or its blocks copied
 * sparsely, and thawed again, also when the copy fails.
 */
export async function copyFrozen(
  mountpoint: string,
  image: string,
  to: string,
  mode: CloneMode,
): Promise<void> {
  await tool('fsfreeze', ['--freeze', mountpoint]);
  try {
    await tool('cp', [mode === 'reflink' ? '--reflink=always' : '--sparse=always', image, to]);
  } finally {
    await tool('fsfreeze', ['--unfreeze', mountpoint]);
  }
}

/** Loop-mounts an image; the loop device is freed again by umount (autoclear). */
export async function mountImage(image: string, dir: string): Promise<void> {
  await tool('mount', ['-o', 'loop,nosuid,nodev', image, dir]);
}

export async function bindMount(source: string, target: string, readOnly: boolean): Promise<void> {
  await tool('mount', ['--bind', source, target]);
  if (readOnly) {
    try {
      await tool('mount', ['-o', 'remount,bind,ro', target]);
    } catch (err) {
      await unmountTree(target);
      throw err;
    }
  }
}

/** Mount points at or below dir, deepest first, as the kernel lists them now. */
export async function mountsBelow(dir: string): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const points = text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((p) => p === dir || p.startsWith(prefix));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

export async function isMounted(dir: string): Promise<boolean> {
  return (await mountsBelow(dir)).includes(dir);
}

/**
 * Unmounts everything at or below dir, deepest first. A mount still busy is
 * detached lazily: it disappears from the host's tree at once, and the kernel
 * frees it (and its loop device) when the last user is gone.
 */
export async function unmountTree(dir: string): Promise<void> {
  for (const point of await mountsBelow(dir)) {
    await tool('umount', [point]).catch(() => tool('umount', ['-l', point]));
  }
}
