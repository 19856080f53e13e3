/**
 * The S3 snapshot store: manifests and content-addressed files in an
 * S3-compatible bucket, with the local store as this host's cache. A host
 * that lacks a snapshot fetches it (only the files it lacks) before a restore.
 * Uses the official AWS SDK client, which speaks to any S3-compatible server
 * (AWS, MinIO, Ceph, R2, ...) given an endpoint.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createReadStream } from 'node:fs';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { WarrenError } from '@warren/protocol';
import { LocalSnapshotStore, sha256File } from './local';
import type { SnapshotManifest, SnapshotStore } from './store';

export interface S3StoreConfig {
  bucket: string;
  /** Key prefix inside the bucket, e.g. "warren/". */
  prefix: string;
  /** For S3-compatible servers; path-style addressing is used then. */
  endpoint?: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /**
   * A file no image refers to is collected only once it is this old (default
   * 3600): an upload in flight may already use it before its manifest lands.
   */
  collectGraceSeconds?: number;
}

/** A client for the bucket: plain uploads, path-style addressing for S3-compatible servers. */
export function s3Client(cfg: S3StoreConfig): S3Client {
  return new S3Client({
    region: cfg.region,
    // Plain uploads: many S3-compatible servers do not understand the SDK's
    // default aws-chunked checksum framing. Integrity is checked by our own hashes.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(cfg.endpoint ? { endpoint: cfg.endpoint, forcePathStyle: true } : {}),
    ...(cfg.accessKeyId && cfg.secretAccessKey
      ? { credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey } }
      : {}),
  });
}

export class S3SnapshotStore implements SnapshotStore {
  readonly kind = 's3' as const;
  private readonly client: S3Client;
  private readonly fetching = new Map<string, Promise<void>>();

  constructor(
    private readonly cfg: S3StoreConfig,
    readonly cache: LocalSnapshotStore,
  ) {
    this.client = s3Client(cfg);
  }

  /** Every call to the bucket: a failure becomes a typed error, not a stack trace. */
  private async send<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof WarrenError) throw err;
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404) throw err;
      throw new WarrenError(
        'SNAPSHOT_STORE_UNAVAILABLE',
        `snapshot store: ${what} failed: ${(err as Error).message}`,
      );
    }
  }

  private key(kind: 'blobs' | 'manifests', name: string): string {
    return `${this.cfg.prefix}${kind}/${name}`;
  }

  private async exists(key: string): Promise<boolean> {
    return (await this.modified(key)) !== null;
  }

  /** When an object was last written (ms), or null when it is not there. */
  private async modified(key: string): Promise<number | null> {
    try {
      const head = await this.send('head', () =>
        this.client.send(new HeadObjectCommand({ Bucket: this.cfg.bucket, Key: key })),
      );
      return head.LastModified?.getTime() ?? 0;
    } catch (err) {
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404)
        return null;
      throw err;
    }
  }

  private graceMs(): number {
    return (this.cfg.collectGraceSeconds ?? 3600) * 1000;
  }

  async put<M>(id: string, imageDir: string, meta: M): Promise<SnapshotManifest<M>> {
    const manifest = await this.cache.put(id, imageDir, meta);
    for (const f of manifest.files) {
      const key = this.key('blobs', f.sha256);
      // A file already there is reused while young; an older one is uploaded
      // again, which renews it (see collect).
      const modified = await this.modified(key);
      if (modified !== null && modified > Date.now() - this.graceMs() / 2) continue;
      await this.send('upload', () =>
        this.client.send(
          new PutObjectCommand({
            Bucket: this.cfg.bucket,
            Key: key,
            Body: createReadStream(this.cache.blobPath(f.sha256)),
            ContentLength: f.size,
          }),
        ),
      );
    }
    // The manifest goes last: a snapshot is visible to other hosts only when complete.
    await this.send('upload', () =>
      this.client.send(
        new PutObjectCommand({
          Bucket: this.cfg.bucket,
          Key: this.key('manifests', `${id}.json`),
          Body: JSON.stringify(manifest),
          ContentType: 'application/json',
        }),
      ),
    );
    return manifest;
  }

  private async getBody(key: string): Promise<Readable> {
    try {
      const res = await this.send('download', () =>
        this.client.send(new GetObjectCommand({ Bucket: this.cfg.bucket, Key: key })),
      );
      return res.Body as Readable;
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404)
        throw new WarrenError('SNAPSHOT_NOT_FOUND', `${key} is not in the snapshot store`);
      throw err;
    }
  }

  /** Copies a snapshot from the bucket into the local cache (only the files it lacks). */
  async fetch(id: string): Promise<void> {
    const body = await this.getBody(this.key('manifests', `${id}.json`));
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(c as Buffer);
    const manifest = JSON.parse(Buffer.concat(chunks).toString('utf8')) as SnapshotManifest;
    for (const f of manifest.files) {
      const target = this.cache.blobPath(f.sha256);
      if (
        await stat(target).then(
          () => true,
          () => false,
        )
      )
        continue;
      await mkdir(dirname(target), { recursive: true });
      // Another snapshot with this file may be fetching it too: each writes its own part.
      const tmp = `${target}.${randomBytes(4).toString('hex')}.part`;
      await pipeline(await this.getBody(this.key('blobs', f.sha256)), createWriteStream(tmp));
      if ((await sha256File(tmp)) !== f.sha256) {
        await rm(tmp, { force: true });
        throw new WarrenError(
          'SNAPSHOT_CORRUPT',
          `file ${f.name} of snapshot ${id} does not match its hash`,
        );
      }
      await rename(tmp, target);
    }
    await this.cache.writeManifest(manifest);
  }

  async materialize<M>(id: string, dir: string): Promise<SnapshotManifest<M>> {
    if (!(await this.cache.has(id))) {
      // Restores of one snapshot at once on this host (fork-tree children) fetch it once.
      let fetching = this.fetching.get(id);
      if (!fetching) {
        fetching = this.fetch(id).finally(() => this.fetching.delete(id));
        this.fetching.set(id, fetching);
      }
      await fetching;
    }
    return this.cache.materialize<M>(id, dir);
  }

  async delete(id: string): Promise<void> {
    await this.send('delete', () =>
      this.client.send(
        new DeleteObjectCommand({
          Bucket: this.cfg.bucket,
          Key: this.key('manifests', `${id}.json`),
        }),
      ),
    );
    await this.cache.delete(id);
    await this.collect();
  }

  private async list(prefix: string): Promise<string[]> {
    return (await this.listObjects(prefix)).map((o) => o.key);
  }

  private async listObjects(prefix: string): Promise<{ key: string; modified: number }[]> {
    const objects: { key: string; modified: number }[] = [];
    let token: string | undefined;
    do {
      const page = await this.send('list', () =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.cfg.bucket,
            Prefix: prefix,
            ContinuationToken: token,
          }),
        ),
      );
      for (const o of page.Contents ?? [])
        if (o.Key) objects.push({ key: o.Key, modified: o.LastModified?.getTime() ?? 0 });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return objects;
  }

  /**
   * Removes files in the bucket that no manifest refers to (mark and sweep),
   * only those older than the grace period: an upload in flight reuses only
   * files younger than half of it (it writes older ones again) and writes its
   * manifest last, so a collection during the upload cannot take its files.
   */
  private async collect(): Promise<void> {
    const before = Date.now() - this.graceMs();
    const refs = new Set<string>();
    for (const key of await this.list(this.key('manifests', ''))) {
      const chunks: Buffer[] = [];
      for await (const c of await this.getBody(key)) chunks.push(c as Buffer);
      const m = JSON.parse(Buffer.concat(chunks).toString('utf8')) as SnapshotManifest;
      for (const f of m.files) refs.add(f.sha256);
    }
    for (const { key, modified } of await this.listObjects(this.key('blobs', ''))) {
      const sha = key.slice(key.lastIndexOf('/') + 1);
      if (!refs.has(sha) && modified < before)
        await this.send('delete', () =>
          this.client.send(new DeleteObjectCommand({ Bucket: this.cfg.bucket, Key: key })),
        );
    }
  }

  has(id: string): Promise<boolean> {
    return this.exists(this.key('manifests', `${id}.json`));
  }

  evict(id: string): Promise<void> {
    return this.cache.delete(id);
  }

  localBytes(): Promise<number> {
    return this.cache.localBytes();
  }

  /** Bucket keys under the prefix (tests and diagnostics). */
  keys(): Promise<string[]> {
    return this.list(this.cfg.prefix);
  }
}
