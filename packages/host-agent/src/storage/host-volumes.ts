/**
 * Volumes on this host: each one a size-limited ext4 image, loop-mounted.
 *
 *   <volumes>/<id>/volume.img   the sparse image; its size is the volume's limit
 *   <volumes>/<id>/mnt/         where it is mounted
 *   <volumes>/<id>/mnt/data/    what sandboxes see (hides lost+found)
 *
 * Mounts outlive a restart of Warren, like sandboxes do; at start every
 * volume that is not mounted (after a reboot) is mounted again.
 */
import { createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, realpath, rm, statfs } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import type { TemplateCatalog } from '../templates/catalog';
import { WarrenError } from '@warren/protocol';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  copyFrozen,
  copyTree,
  isMounted,
  makeExt4Image,
  mountImage,
  unmountTree,
  untarInto,
  type CloneMode,
} from './mounts';
import { openVolumePool } from './volume-pool';

export class HostVolumes {
  /** How clone() copies an image; set by open(). */
  cloneMode: CloneMode = 'copy';

  constructor(
    readonly root: string,
    /** The XFS pool image mounted on `root` where the host's file system has no reflinks. */
    private readonly pool: string = `${root}-pool.xfs`,
  ) {}

  /** Makes the volumes directory ready (see volume-pool.ts); returns why copies are plain, if they are. */
  async open(): Promise<string | null> {
    const r = await openVolumePool(this.root, this.pool);
    this.cloneMode = r.mode;
    return r.reason;
  }

  private dir(id: string): string {
    return join(this.root, id);
  }

  /** The directory bind-mounted into sandboxes. */
  data(id: string): string {
    return join(this.dir(id), 'mnt', 'data');
  }

  /**
   * Makes and mounts a new volume; on failure nothing of it is left. The image
   * is sparse: a size the host's disk could not hold today is refused.
   */
  async create(
    id: string,
    sizeMb: number,
    o: {
      journal?: boolean;
      seed?: { dir: string; to: string };
      unpack?: { body: () => Promise<Readable>; to: string };
      fetch?: { files: Array<{ name: string; body: () => Promise<Readable> }>; to: string };
    } = {},
  ): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    // The pool's own free space and the host's (which the sparse pool draws on).
    const free = await Promise.all(
      [this.root, dirname(this.pool)].map(async (dir) => {
        const fs = await statfs(dir).catch(() => null);
        return fs ? Math.floor((fs.bavail * fs.bsize) / 1024 / 1024) : Infinity;
      }),
    );
    const freeMb = Math.min(...free);
    if (sizeMb > freeMb)
      throw new WarrenError(
        'INSUFFICIENT_CAPACITY',
        `the host has ${freeMb} MiB of disk free, less than ${sizeMb} MiB`,
        { requested_mb: sizeMb, free_mb: freeMb },
      );
    const dir = this.dir(id);
    await mkdir(join(dir, 'mnt'), { recursive: true });
    try {
      await makeExt4Image(join(dir, 'volume.img'), sizeMb, o);
      await mountImage(join(dir, 'volume.img'), join(dir, 'mnt'));
      await mkdir(this.data(id), { mode: 0o755 });
      if (o.seed) await copyTree(o.seed.dir, join(this.data(id), o.seed.to));
      if (o.unpack) await untarInto(await o.unpack.body(), join(this.data(id), o.unpack.to));
      if (o.fetch) {
        const to = join(this.data(id), o.fetch.to);
        await mkdir(to, { mode: 0o755 });
        for (const f of o.fetch.files)
          await pipeline(
            await f.body(),
            createWriteStream(join(to, plainName(f.name)), { flags: 'wx', mode: 0o644 }),
          );
      }
    } catch (err) {
      await this.remove(id);
      throw err;
    }
  }

  /**
   * Makes volume `to` a crash-consistent copy of mounted volume `from`, then
   * empties the paths of `clear` in it (relative to `data`: a file is
   * removed, a directory's entries are); on failure `to` is gone.
   */
  async clone(from: string, to: string, o: { clear?: string[] } = {}): Promise<void> {
    const clear = (o.clear ?? []).map((p) => insideData(p));
    await this.ensureMounted(from);
    const dir = this.dir(to);
    await mkdir(join(dir, 'mnt'), { recursive: true });
    try {
      await copyFrozen(
        join(this.dir(from), 'mnt'),
        join(this.dir(from), 'volume.img'),
        join(dir, 'volume.img'),
        this.cloneMode,
      );
      await mountImage(join(dir, 'volume.img'), join(dir, 'mnt'));
      for (const p of clear) await emptyPath(this.data(to), p);
    } catch (err) {
      await this.remove(to);
      throw err;
    }
  }

  async ensureMounted(id: string): Promise<void> {
    const mnt = join(this.dir(id), 'mnt');
    if (!(await isMounted(mnt))) await mountImage(join(this.dir(id), 'volume.img'), mnt);
  }

  async usedBytes(id: string): Promise<number> {
    try {
      const s = await statfs(join(this.dir(id), 'mnt'));
      return (s.blocks - s.bfree) * s.bsize;
    } catch {
      return 0;
    }
  }

  /** Unmounts and deletes a volume and its data; safe to repeat. */
  async remove(id: string): Promise<void> {
    await unmountTree(this.dir(id));
    await rm(this.dir(id), { recursive: true, force: true });
  }

  /** Unmounts every volume; the images and their data stay (tests, `destroyOnClose`). */
  async unmountAll(): Promise<void> {
    await unmountTree(this.root);
  }
}

/** A name made at the top of a volume (a seed's or an unpacked archive's `to`): one plain name. */
export function plainName(to: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(to))
    throw new WarrenError('INVALID_REQUEST', `volume: ${to} is not a plain name`);
  return to;
}

/**
 * Where a volume seed comes from: a directory of a ready template's root. The
 * path must be absolute and plain (no `..`), and it must be a directory in
 * the root, not a link out of it; `to` is one plain name.
 */
export async function templateSeed(
  catalog: TemplateCatalog,
  seed: { template: string; from: string; to: string },
): Promise<{ dir: string; to: string }> {
  const bad = (why: string) => new WarrenError('INVALID_REQUEST', `volume seed: ${why}`);
  if (!seed.from.startsWith('/') || posix.normalize(seed.from) !== seed.from)
    throw bad(`${seed.from} is not an absolute, normal path`);
  plainName(seed.to);
  const t = await catalog.get(seed.template);
  const dir = join(t.rootfs, seed.from);
  const info = await lstat(dir).catch(() => null);
  if (!info?.isDirectory()) throw bad(`${seed.from} is not a directory of template ${t.name}`);
  if (!(await realpath(dir)).startsWith(`${await realpath(t.rootfs)}/`))
    throw bad(`${seed.from} leads out of template ${t.name}'s root`);
  return { dir, to: seed.to };
}

/** A path relative to a volume's data directory that stays inside it; INVALID_REQUEST otherwise. */
function insideData(p: string): string {
  const n = typeof p === 'string' && p ? posix.normalize(p) : '';
  if (!n || p.startsWith('/') || n === '.' || n.split('/').includes('..'))
    throw new WarrenError('INVALID_REQUEST', `not a path inside the volume: ${JSON.stringify(p)}`);
  return n;
}

/**
 * Removes `rel` below `root` if a file, its entries if a directory; nothing
 * there is fine. The volume's contents are the sandbox's: a symbolic link on
 * the way is not followed out of `root`, and one at the end is removed itself.
 */
async function emptyPath(root: string, rel: string): Promise<void> {
  const realRoot = await realpath(root);
  const parent = await realpath(dirname(join(root, rel))).catch(() => null);
  if (!parent || (parent !== realRoot && !parent.startsWith(`${realRoot}/`))) return;
  const path = join(parent, posix.basename(rel));
  const st = await lstat(path).catch(() => null);
  if (!st) return;
  if (!st.isDirectory()) return rm(path, { force: true });
  for (const name of await readdir(path))
    await rm(join(path, name), { recursive: true, force: true });
}
