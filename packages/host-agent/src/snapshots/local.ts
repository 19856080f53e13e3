/** The local snapshot store: content-addressed files under one directory. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import {
  copyFile,
  link,
  mkdir,
  readFile,
  readdir,
  rename,
  rm,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import type { ManifestFile, SnapshotManifest, SnapshotStore } from './store';

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const SAFE_ID = /^[A-Za-z0-9_.-]+$/;

/**
 * Layout under root:
 *   blobs/<first two hex>/<sha256>   one file per distinct content
 *   manifests/<snapshot id>.json     which blobs make up a snapshot, and its meta
 */
export class LocalSnapshotStore implements SnapshotStore {
  readonly kind = 'local' as const;

  constructor(readonly root: string) {}

  /** put and delete one at a time: a collection must not take a blob a put is adding. */
  private queue: Promise<unknown> = Promise.resolve();
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.catch(() => undefined).then(fn);
    this.queue = next;
    return next;
  }

  blobPath(sha256: string): string {
    return join(this.root, 'blobs', sha256.slice(0, 2), sha256);
  }

  private manifestPath(id: string): string {
    if (!SAFE_ID.test(id)) throw new WarrenError('INVALID_REQUEST', `bad snapshot id ${id}`);
    return join(this.root, 'manifests', `${id}.json`);
  }

  async has(id: string): Promise<boolean> {
    return stat(this.manifestPath(id)).then(
      () => true,
      () => false,
    );
  }

  async manifest<M>(id: string): Promise<SnapshotManifest<M>> {
    try {
      return JSON.parse(await readFile(this.manifestPath(id), 'utf8')) as SnapshotManifest<M>;
    } catch {
      throw new WarrenError('SNAPSHOT_NOT_FOUND', `snapshot ${id} is not in the store`);
    }
  }

  /** Moves one file into the blob store under its hash (kept once). */
  async addBlob(path: string): Promise<ManifestFile & { name: string }> {
    const sha256 = await sha256File(path);
    const { size } = await stat(path);
    const target = this.blobPath(sha256);
    await mkdir(dirname(target), { recursive: true });
    const exists = await stat(target).then(
      () => true,
      () => false,
    );
    if (exists) await unlink(path);
    else await rename(path, target);
    return { name: '', sha256, size };
  }

  async writeManifest<M>(manifest: SnapshotManifest<M>): Promise<void> {
    const path = this.manifestPath(manifest.id);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(`${path}.tmp`, JSON.stringify(manifest));
    await rename(`${path}.tmp`, path);
  }

  put<M>(id: string, imageDir: string, meta: M): Promise<SnapshotManifest<M>> {
    return this.serial(() => this.putNow(id, imageDir, meta));
  }

  private async putNow<M>(id: string, imageDir: string, meta: M): Promise<SnapshotManifest<M>> {
    const files: ManifestFile[] = [];
    for (const name of (await readdir(imageDir)).sort()) {
      const blob = await this.addBlob(join(imageDir, name));
      files.push({ ...blob, name });
    }
    const manifest = { id, files, meta, created_at: new Date().toISOString() };
    await this.writeManifest(manifest);
    await rm(imageDir, { recursive: true, force: true });
    return manifest;
  }

  async materialize<M>(id: string, dir: string): Promise<SnapshotManifest<M>> {
    const manifest = await this.manifest<M>(id);
    await mkdir(dir, { recursive: true });
    for (const f of manifest.files) {
      // A hard link costs nothing; restores only read the image.
      await link(this.blobPath(f.sha256), join(dir, f.name)).catch(() =>
        copyFile(this.blobPath(f.sha256), join(dir, f.name)),
      );
    }
    return manifest;
  }

  /** Every blob some manifest refers to. */
  private async referenced(): Promise<Set<string>> {
    const refs = new Set<string>();
    const names = await readdir(join(this.root, 'manifests')).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      const m = JSON.parse(
        await readFile(join(this.root, 'manifests', name), 'utf8'),
      ) as SnapshotManifest;
      for (const f of m.files) refs.add(f.sha256);
    }
    return refs;
  }

  delete(id: string): Promise<void> {
    return this.serial(async () => {
      await rm(this.manifestPath(id), { force: true });
      await this.collect();
    });
  }

  /** The local store is the store itself: nothing to drop. */
  async evict(): Promise<void> {}

  /** Removes blobs that no manifest refers to. */
  async collect(): Promise<void> {
    const refs = await this.referenced();
    const blobs = join(this.root, 'blobs');
    for (const prefix of await readdir(blobs).catch(() => [] as string[])) {
      for (const sha of await readdir(join(blobs, prefix))) {
        // A .part is a file still being fetched (S3): its manifest comes after it.
        if (!refs.has(sha) && !sha.endsWith('.part'))
          await rm(join(blobs, prefix, sha), { force: true });
      }
    }
  }

  async localBytes(): Promise<number> {
    let total = 0;
    const blobs = join(this.root, 'blobs');
    for (const prefix of await readdir(blobs).catch(() => [] as string[])) {
      for (const sha of await readdir(join(blobs, prefix)))
        total += (await stat(join(blobs, prefix, sha))).size;
    }
    return total;
  }
}
