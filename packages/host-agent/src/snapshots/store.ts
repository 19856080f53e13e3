/**
 * Where snapshot images live. An image is a directory of files (what the
 * runtime's checkpoint wrote); the store keeps each file once, named by the
 * SHA-256 of its content, and a manifest per snapshot that lists its files.
 * Two backends share this interface: a local directory (the default) and an
 * S3-compatible bucket with the local directory as its cache.
 */

export interface ManifestFile {
  name: string;
  sha256: string;
  size: number;
}

export interface SnapshotManifest<M = unknown> {
  id: string;
  files: ManifestFile[];
  /** What the restore needs besides the image (the sandbox spec). */
  meta: M;
  created_at: string;
}

export interface SnapshotStore {
  readonly kind: 'local' | 's3';
  /** Takes the files of imageDir into the store (the directory is consumed). */
  put<M>(id: string, imageDir: string, meta: M): Promise<SnapshotManifest<M>>;
  /**
   * Makes the image available as a directory at dir (fetching it first when
   * this host lacks it) and returns its manifest. The caller removes dir.
   */
  materialize<M>(id: string, dir: string): Promise<SnapshotManifest<M>>;
  /** Forgets the snapshot and frees every file no other snapshot refers to. */
  delete(id: string): Promise<void>;
  /** Whether the store holds a snapshot (S3: the bucket does, whatever this host caches). */
  has(id: string): Promise<boolean>;
  /** Drops this host's cached copy of a snapshot (S3: the bucket keeps it; local: nothing). */
  evict(id: string): Promise<void>;
  /** Bytes this host's store holds (files shared by snapshots counted once). */
  localBytes(): Promise<number>;
}
