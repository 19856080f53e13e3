/**
 * A sandbox's disk: one size-limited file system per sandbox (disk_mb), at
 * <workDir>/disk, holding
 *
 *   overlay/   the directory of the root overlay's filestore: everything the
 *              sandbox writes to its root ends up in one file here
 *   volumes/   mounted at /run/warren/volumes in the sandbox; one bind mount
 *              per attached volume, read-only ones remounted read-only
 *
 * Whatever the sandbox writes into /run/warren/volumes outside a volume also
 * counts against disk_mb. The disk is made before a restore and removed when
 * the sandbox stops or hibernates (a hibernation image holds the files).
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import { bindMount, makeExt4Image, mountImage, mountsBelow, unmountTree } from './mounts';

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

export function sandboxDiskPaths(workDir: string): SandboxDisk & { root: string; image: string } {
  const root = join(workDir, 'disk');
  return {
    root,
    image: join(workDir, 'disk.img'),
    filestoreDir: join(root, 'overlay'),
    volumesDir: join(root, 'volumes'),
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
): Promise<SandboxDisk> {
  const paths = sandboxDiskPaths(workDir);
  await mkdir(paths.root, { recursive: true });
  try {
    if (diskMb !== null) {
      await makeExt4Image(paths.image, diskMb);
      await mountImage(paths.image, paths.root);
    }
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
  await rm(paths.image, { force: true });
}
