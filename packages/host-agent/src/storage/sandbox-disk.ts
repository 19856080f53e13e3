/**
 * A sandbox's disk: one size-limited file system per sandbox (disk_mb), in
 * <workDir>/disk:
 *
 *   disk.img      the file system's sparse image
 *   fs/           where it is mounted, holding
 *     overlay/    the directory of the root overlay's filestore: everything the
 *                 sandbox writes to its root ends up in one file here
 *     volumes/    mounted at /run/warren/volumes in the sandbox; one bind mount
 *                 per attached volume, read-only ones remounted read-only
 *
 * Whatever the sandbox writes into /run/warren/volumes outside a volume also
 * counts against disk_mb. The disk is made before a restore (or taken ready
 * from the DiskPool) and removed when the sandbox stops or hibernates (a
 * hibernation image holds the files). Disks made before this layout were
 * mounted at <workDir>/disk itself with the image beside it; they are
 * released the same way.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import type { DiskPool } from './disk-pool';
import { bindMount, makeExt4Image, mountImage, mountsBelow, unmountTree } from './mounts';

export const DISK_IMAGE = 'disk.img';
export const DISK_MOUNT = 'fs';

export interface HostVolume {
  id: string;
  name: string;
  mountPath: string;
  readOnly: boolean;
}

export interface SandboxDisk {
  filestoreDir: string;
  volumesDir: string;
}

/** Makes a disk of sizeMb in the empty directory dir: the image and its mounted file system. */
export async function makeDisk(dir: string, sizeMb: number): Promise<void> {
  await mkdir(join(dir, DISK_MOUNT), { recursive: true });
  await makeExt4Image(join(dir, DISK_IMAGE), sizeMb);
  await mountImage(join(dir, DISK_IMAGE), join(dir, DISK_MOUNT));
}

export function sandboxDiskPaths(workDir: string): SandboxDisk & { root: string } {
  const root = join(workDir, 'disk');
  return {
    root,
    filestoreDir: join(root, DISK_MOUNT, 'overlay'),
    volumesDir: join(root, DISK_MOUNT, 'volumes'),
  };
}

/**
 * Makes the disk and binds the volumes into it. With diskMb null the layout is
 * plain directories (the template bake: nothing limits it, nothing outlives it).
 */
export async function prepareSandboxDisk(
  workDir: string,
  diskMb: number | null,
  volumes: HostVolume[],
  volumeData: (id: string) => string,
  pool?: DiskPool,
): Promise<SandboxDisk> {
  const paths = sandboxDiskPaths(workDir);
  try {
    if (diskMb !== null && !(await pool?.take(diskMb, paths.root)))
      await makeDisk(paths.root, diskMb);
    await mkdir(paths.filestoreDir, { recursive: true });
    await mkdir(paths.volumesDir, { recursive: true });
    for (const v of volumes) {
      const target = join(paths.volumesDir, v.name);
      await mkdir(target, { recursive: true });
      await bindMount(volumeData(v.id), target, v.readOnly);
    }
  } catch (err) {
    await releaseSandboxDisk(workDir);
    throw err;
  }
  return { filestoreDir: paths.filestoreDir, volumesDir: paths.volumesDir };
}

/** Unmounts the volumes and the disk and deletes the disk image; safe to repeat. */
export async function releaseSandboxDisk(workDir: string): Promise<void> {
  await releaseDiskDir(sandboxDiskPaths(workDir).root);
  await rm(join(workDir, DISK_IMAGE), { force: true }); // the layout before fs/
}

/**
 * Unmounts everything in a disk directory (a sandbox's, one moved aside by
 * retireSandboxDisk, or one of the pool's), then deletes it; never deletes
 * through a mount.
 */
export async function releaseDiskDir(dir: string): Promise<void> {
  await unmountTree(dir);
  const left = await mountsBelow(dir);
  if (left.length > 0)
    throw new WarrenError('RUNTIME_ERROR', `cannot unmount ${left.join(', ')}; left in place`);
  await rm(dir, { recursive: true, force: true });
}

const RETIRED = /^disk\.retired-[0-9a-f]+$/;

/**
 * Moves the sandbox's disk aside (a rename, the mounts go with it), so that a
 * new disk can take its place at once while the old one is released. Returns
 * where it went, or null when there is no disk or it cannot move (a disk of the
 * layout before fs/ is itself a mount point).
 */
export async function retireSandboxDisk(workDir: string): Promise<string | null> {
  const to = join(workDir, `disk.retired-${randomBytes(4).toString('hex')}`);
  try {
    await rename(sandboxDiskPaths(workDir).root, to);
    return to;
  } catch {
    return null;
  }
}

/** Releases the disks moved aside and left in a work directory (after a restart). */
export async function releaseRetiredDisks(workDir: string): Promise<void> {
  const names = await readdir(workDir).catch(() => [] as string[]);
  for (const name of names.filter((n) => RETIRED.test(n)))
    await releaseDiskDir(join(workDir, name));
}

/** Releases the sandbox's disk and every retired one left in its work directory. */
export async function releaseAllSandboxDisks(workDir: string): Promise<void> {
  await releaseRetiredDisks(workDir);
  await releaseSandboxDisk(workDir);
}
