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
import { mkdir, rm } from 'node:fs/promises';
import { DISK_IMAGE, DISK_MOUNT, makeDisk, type DiskPool } from './disk-pool';
import { join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import { bindMount, mountsBelow, unmountTree } from './mounts';

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
  const paths = sandboxDiskPaths(workDir);
  await unmountTree(paths.root);
  const left = await mountsBelow(paths.root);
  if (left.length > 0)
    throw new WarrenError('RUNTIME_ERROR', `cannot unmount ${left.join(', ')}; left in place`);
  await rm(paths.root, { recursive: true, force: true });
  await rm(join(workDir, DISK_IMAGE), { force: true }); // the layout before fs/
}
