/**
 * HostArchiveApi: objects move between a sandbox's files and the archive on
 * the host, so a database's sandbox never holds storage credentials.
 */
import { join } from 'node:path';
import { posix } from 'node:path';
import { WarrenError, type HostArchiveApi, type HostFileApi } from '@warren/protocol';
import type { S3StoreConfig } from '../snapshots/s3';
import { LocalObjectStore } from './local';
import { S3ObjectStore } from './s3';
import { type ObjectStore } from './store';
import type { VolumeReader } from './volume-read';

export function createObjectStore(home: string, s3?: S3StoreConfig): ObjectStore {
  return s3 ? new S3ObjectStore(s3) : new LocalObjectStore(join(home, 'archive'));
}

async function text(store: ObjectStore, key: string): Promise<string | null> {
  try {
    const chunks: Buffer[] = [];
    for await (const c of await store.get(key)) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  } catch (err) {
    if (err instanceof WarrenError && err.code === 'ARCHIVE_OBJECT_NOT_FOUND') return null;
    throw err;
  }
}

/**
 * `volume` lists and reads a sandbox's files from the host's mount of its
 * volume when they are on one (see volume-read.ts), else answers null and the
 * sandbox does it.
 */
export function hostArchiveApi(
  store: ObjectStore,
  files: HostFileApi,
  volume: VolumeReader = { read: async () => null, list: async () => null },
): HostArchiveApi {
  const upload = async (sandboxId: string, path: string, key: string) => {
    const { size, stream } =
      (await volume.read(sandboxId, path)) ?? (await files.read(sandboxId, path));
    await store.put(key, stream, size);
    return { key, size };
  };
  return {
    async collect(sandboxId, dir, prefix, fence) {
      const names =
        (await volume.list(sandboxId, dir)) ??
        (await files.list(sandboxId, dir)).items
          .filter((e) => e.type === 'file')
          .map((e) => e.name);
      const ready = names.filter((name) => !name.endsWith('.tmp')).sort();
      if (ready.length === 0) return [];
      if (fence) {
        const current = await text(store, fence.key);
        if (current !== fence.value)
          throw new WarrenError(
            'DATABASE_FENCED',
            `archive ${prefix} belongs to epoch ${current ?? 'none'}, not ${fence.value}`,
          );
      }
      const moved = [];
      for (const name of ready) {
        try {
          moved.push(await upload(sandboxId, posix.join(dir, name), `${prefix}${name}`));
          await files.remove(sandboxId, posix.join(dir, name), false);
        } catch (err) {
          // Moved meanwhile by another collector: nothing to do.
          const e = err as { code?: string; message?: string };
          if (e.code === 'FILE_NOT_FOUND' || /ENOENT/.test(e.message ?? '')) continue;
          throw err;
        }
      }
      return moved;
    },
    upload,
    put: (key, body) => store.put(key, Buffer.from(body), Buffer.byteLength(body)),
    get: (key) => text(store, key),
    list: (prefix) => store.list(prefix),
    remove: (prefix) => store.remove(prefix),
  };
}
