/**
 * Reads a file that a sandbox wrote on one of its volumes straight from this
 * host's mount of the volume, not through the sandbox: a database's WAL
 * segments and base backups leave its sandbox this way. Streaming 16 MiB out
 * through the guest agent took 2 to 50 s on a loaded host; the volume's own
 * mount gives it at disk speed. Volume mounts in a sandbox are gVisor's
 * `shared` kind, so what the sandbox has written and synced is on the host.
 *
 * What lies below a volume's root is the sandbox's to shape, so nothing here
 * follows it out: the file is opened without following a last symlink, and
 * kept only if the kernel says the opened file is inside the volume's root
 * (an earlier symlink may lead anywhere; the opened file is what counts). A
 * file that fails that, or is not a regular file, is read through the sandbox
 * as before; a directory is listed the same way, through the descriptor that
 * was checked. Only reads take this path; writes and removals stay in the
 * sandbox, where a swapped directory cannot point them at the host.
 */
import { constants } from 'node:fs';
import { open, readdir, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { Readable } from 'node:stream';
import { GUEST_VOLUMES_DIR } from '@warren/protocol/guest';
import type { HostContext } from '../context';
import { readStorage } from '../sandboxes/state-files';
import type { HostVolume } from '../storage/sandbox-disk';

export interface VolumeFile {
  size: number;
  stream: Readable;
}

/** A running sandbox's files and directories, from the host's mount when on one of its volumes. */
export interface VolumeReader {
  read(sandboxId: string, path: string): Promise<VolumeFile | null>;
  /** The names of the regular files in a directory. */
  list(sandboxId: string, dir: string): Promise<string[] | null>;
}

export function volumeReader(ctx: HostContext): VolumeReader {
  const locate = async (sandboxId: string, path: string) => {
    if (!ctx.registry.has(sandboxId)) return null;
    const { volumes } = await readStorage(ctx.registry.live(sandboxId).workDir);
    const at = onVolume(volumes, path);
    return at && { root: ctx.volumes.data(at.volume.id), rel: at.rel };
  };
  return {
    read: async (sandboxId, path) => {
      const at = await locate(sandboxId, path);
      return at && openWithin(at.root, at.rel);
    },
    list: async (sandboxId, dir) => {
      const at = await locate(sandboxId, dir);
      return at && listWithin(at.root, at.rel);
    },
  };
}

/** The volume and the path inside it of sandbox path `path`, or null when it is on none. */
export function onVolume(
  volumes: HostVolume[],
  path: string,
): { volume: HostVolume; rel: string } | null {
  const p = posix.normalize(path);
  for (const volume of volumes) {
    for (const root of [volume.mountPath, posix.join(GUEST_VOLUMES_DIR, volume.name)]) {
      const prefix = root.endsWith('/') ? root : `${root}/`;
      if (p.startsWith(prefix) && p.length > prefix.length)
        return { volume, rel: p.slice(prefix.length) };
    }
  }
  return null;
}

/**
 * Opens `rel` below `root` with `flags` (O_NOFOLLOW added) if the kernel says
 * the file opened is inside `root`; null otherwise, or when it is not there.
 */
async function openInside(root: string, rel: string, flags: number): Promise<FileHandle | null> {
  const realRoot = await realpath(root).catch(() => null);
  if (!realRoot || rel.split('/').includes('..')) return null;
  const fh = await open(join(realRoot, rel), flags | constants.O_NOFOLLOW).catch(() => null);
  if (!fh) return null;
  const real = await readlink(`/proc/self/fd/${fh.fd}`).catch(() => '');
  if (real.startsWith(`${realRoot}/`)) return fh;
  await fh.close();
  return null;
}

/** Opens `rel` below `root` for reading if it is a regular file that is really there. */
export async function openWithin(root: string, rel: string): Promise<VolumeFile | null> {
  const fh = await openInside(root, rel, constants.O_RDONLY | constants.O_NONBLOCK);
  if (!fh) return null;
  const st = await fh.stat().catch(() => null);
  if (!st?.isFile()) {
    await fh.close();
    return null;
  }
  if (st.size === 0) {
    await fh.close();
    return { size: 0, stream: Readable.from([]) };
  }
  // Exactly the bytes there were at open: the stored object's size is declared first.
  return { size: st.size, stream: fh.createReadStream({ start: 0, end: st.size - 1 }) };
}

/** The names of the regular files in directory `rel` below `root` if it is really there. */
export async function listWithin(root: string, rel: string): Promise<string[] | null> {
  const fh = await openInside(root, rel, constants.O_RDONLY | constants.O_DIRECTORY);
  if (!fh) return null;
  try {
    // Through the open descriptor: the directory checked is the one listed.
    const entries = await readdir(`/proc/self/fd/${fh.fd}`, { withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => e.name);
  } catch {
    return null;
  } finally {
    await fh.close();
  }
}
