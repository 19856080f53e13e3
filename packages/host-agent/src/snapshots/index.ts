import { join } from 'node:path';
import { LocalSnapshotStore } from './local';
import { S3SnapshotStore, type S3StoreConfig } from './s3';
import type { SnapshotStore } from './store';

export type { SnapshotStore, SnapshotManifest } from './store';
export { LocalSnapshotStore, S3SnapshotStore, type S3StoreConfig };

/** The local store under dir, or the S3 store with it as cache when s3 is given. */
export function createSnapshotStore(dir: string, s3?: S3StoreConfig): SnapshotStore {
  const local = new LocalSnapshotStore(join(dir));
  return s3 ? new S3SnapshotStore(s3, local) : local;
}
