/**
 * Attached volumes appear under /run/warren/volumes/<name> (a mount every
 * template snapshot has; see GUEST_VOLUMES_DIR). Each one is linked at its
 * mount path with a symlink: a bind mount would need CAP_SYS_ADMIN, which
 * processes in a sandbox do not have. An existing empty directory at the mount
 * path is replaced; anything else there is refused (INVALID_MOUNT_PATH).
 */
import { lstat, mkdir, readdir, readlink, rmdir, symlink, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { WarrenError } from '@warren/protocol/errors';
import { GUEST_VOLUMES_DIR, type GuestVolume } from '@warren/protocol/guest';

async function linkOne(v: GuestVolume): Promise<void> {
  const target = join(GUEST_VOLUMES_DIR, v.name);
  await lstat(target).catch(() => {
    throw new WarrenError('VOLUME_NOT_FOUND', `volume ${v.name} is not mounted in the sandbox`);
  });
  const existing = await lstat(v.mount_path).catch(() => null);
  if (existing?.isSymbolicLink()) {
    if ((await readlink(v.mount_path)) === target) return;
    await unlink(v.mount_path);
  } else if (existing?.isDirectory()) {
    if ((await readdir(v.mount_path)).length > 0)
      throw new WarrenError(
        'INVALID_MOUNT_PATH',
        `mount path ${v.mount_path} is a directory that is not empty in this template`,
      );
    await rmdir(v.mount_path);
  } else if (existing) {
    throw new WarrenError('INVALID_MOUNT_PATH', `mount path ${v.mount_path} is a file`);
  }
  await mkdir(dirname(v.mount_path), { recursive: true });
  await symlink(target, v.mount_path);
}

export async function linkVolumes(volumes: GuestVolume[]): Promise<void> {
  for (const v of volumes) await linkOne(v);
}
