/**
 * Where archived objects live: WAL segments and base backups of databases.
 * Two backends behind one interface, beside the snapshot store: a local
 * directory (the default) and the S3-compatible bucket snapshots use.
 */
import type { Readable } from 'node:stream';
import { WarrenError, type ArchivedObject } from '@warren/protocol';

export interface ObjectStore {
  readonly kind: 'local' | 's3';
  /** Stores body under key, durably, replacing what was there. */
  put(key: string, body: Readable | Buffer, size: number): Promise<void>;
  /** ARCHIVE_OBJECT_NOT_FOUND when there is no such object. */
  get(key: string): Promise<Readable>;
  list(prefix: string): Promise<ArchivedObject[]>;
  remove(prefix: string): Promise<void>;
}

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Keys become file names: `/`-separated segments of safe characters, nothing else. */
export function checkKey(key: string, prefix = false): void {
  const parts = key.split('/');
  if (prefix && parts.at(-1) === '') parts.pop();
  if (parts.length === 0 || !parts.every((p) => SEGMENT.test(p) && p !== '..'))
    throw new WarrenError('INVALID_REQUEST', `invalid archive key ${JSON.stringify(key)}`);
}

export function notFound(key: string): WarrenError {
  return new WarrenError('ARCHIVE_OBJECT_NOT_FOUND', `${key} is not in the archive`);
}
