/**
 * Where volume images live, chosen so that a copy of one can share its blocks
 * (a reflink) instead of copying them: a database branch then costs the same
 * for 50 MiB as for 50 GiB.
 *
 * - The volumes directory is on a file system with reflinks (XFS, btrfs):
 *   images go there as they are.
 * - Otherwise (ext4, the usual case) a pool is made once: a sparse file
 *   `<volumes directory>-pool.xfs` as large as the host's file system, formatted as
 *   XFS with reflinks, loop-mounted on the volumes directory with `discard`
 *   (a deleted volume gives its blocks back to the host) and direct I/O on
 *   its loop device (no second copy of every block in the host's page cache;
 *   an fsync in a volume costs no more than on an image on the host's disk).
 * - A volumes directory that already holds volumes from before the pool, or a
 *   host without mkfs.xfs or XFS, keeps plain copies.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm, stat, statfs, truncate, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { isMounted, type CloneMode } from './mounts';

const run = promisify(execFile);

export interface PoolResult {
  mode: CloneMode;
  /** Why copies are plain ones; null with reflinks. */
  reason: string | null;
}

/** Whether `dir` can clone a file by reference (FICLONE, through cp). */
async function reflinks(dir: string): Promise<boolean> {
  const a = join(dir, `.reflink-probe-${process.pid}`);
  const b = `${a}.copy`;
  try {
    await writeFile(a, 'warren');
    await run('cp', ['--reflink=always', a, b], { timeout: 10_000 });
    return true;
  } catch {
    return false;
  } finally {
    await rm(a, { force: true });
    await rm(b, { force: true });
  }
}

/** Turns on direct I/O for the loop device mounted on `dir`; a kernel that refuses keeps buffered I/O. */
async function directIo(dir: string): Promise<void> {
  try {
    const { stdout } = await run('findmnt', ['-n', '-o', 'SOURCE', '--mountpoint', dir]);
    const dev = stdout.trim();
    if (dev.startsWith('/dev/loop')) await run('losetup', ['--direct-io=on', dev]);
  } catch {
    // buffered I/O still works, only with one more copy of each block cached
  }
}

async function mountPool(image: string, root: string): Promise<void> {
  await run('mount', ['-t', 'xfs', '-o', 'loop,discard,nosuid,nodev', image, root], {
    timeout: 60_000,
  });
  await directIo(root);
}

/**
 * Makes sure `root` (the volumes directory) is on a file system with reflinks
 * where it can be, mounting or making the pool image `pool`. Safe to repeat.
 */
export async function openVolumePool(root: string, pool: string): Promise<PoolResult> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  if (!(await isMounted(root))) {
    const exists = await stat(pool).then(
      () => true,
      () => false,
    );
    if (exists) {
      await mountPool(pool, root);
    } else {
      if (await reflinks(root)) return { mode: 'reflink', reason: null };
      if ((await readdir(root)).length > 0)
        return { mode: 'copy', reason: `${root} holds volumes made before the volume pool` };
      try {
        // As large as the host's file system: the pool never runs out first.
        const host = await statfs(dirname(pool));
        await writeFile(pool, '', { flag: 'wx', mode: 0o600 });
        await truncate(pool, host.blocks * host.bsize);
        await run('mkfs.xfs', ['-q', '-m', 'reflink=1', pool], { timeout: 60_000 });
        await mountPool(pool, root);
      } catch (err) {
        await rm(pool, { force: true });
        const e = err as { stderr?: string; message: string };
        return {
          mode: 'copy',
          reason: `no XFS volume pool: ${(e.stderr || e.message).trim().slice(-300)}`,
        };
      }
    }
  }
  if (await reflinks(root)) return { mode: 'reflink', reason: null };
  return { mode: 'copy', reason: `${root} is mounted but cannot clone files by reference` };
}
