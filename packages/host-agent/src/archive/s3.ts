/** The archive in the S3-compatible bucket of the snapshot store, under `<prefix>archive/`. */
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { WarrenError, type ArchivedObject } from '@warren/protocol';
import type { S3StoreConfig } from '../snapshots/s3';
import { s3Client } from '../snapshots/s3';
import { checkKey, notFound, type ObjectStore } from './store';

const status = (err: unknown) =>
  (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3' as const;
  private readonly client: S3Client;

  constructor(private readonly cfg: S3StoreConfig) {
    this.client = s3Client(cfg);
  }

  private key(key: string): string {
    return `${this.cfg.prefix}archive/${key}`;
  }

  private async send<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof WarrenError || status(err) === 404) throw err;
      throw new WarrenError(
        'SNAPSHOT_STORE_UNAVAILABLE',
        `archive: ${what} failed: ${(err as Error).message}`,
      );
    }
  }

  async put(key: string, body: Readable | Buffer, size: number): Promise<void> {
    checkKey(key);
    await this.send('upload', () =>
      this.client.send(
        new PutObjectCommand({
          Bucket: this.cfg.bucket,
          Key: this.key(key),
          Body: body,
          ContentLength: size,
        }),
      ),
    );
  }

  async get(key: string): Promise<Readable> {
    checkKey(key);
    try {
      const res = await this.send('download', () =>
        this.client.send(new GetObjectCommand({ Bucket: this.cfg.bucket, Key: this.key(key) })),
      );
      return res.Body as Readable;
    } catch (err) {
      if (status(err) === 404) throw notFound(key);
      throw err;
    }
  }

  async list(prefix: string): Promise<ArchivedObject[]> {
    checkKey(prefix, true);
    const out: ArchivedObject[] = [];
    const strip = this.key('').length;
    let token: string | undefined;
    do {
      const page = await this.send('list', () =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.cfg.bucket,
            Prefix: this.key(prefix),
            ContinuationToken: token,
          }),
        ),
      );
      for (const o of page.Contents ?? [])
        if (o.Key) out.push({ key: o.Key.slice(strip), size: o.Size ?? 0 });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async remove(prefix: string): Promise<void> {
    for (const o of await this.list(prefix))
      await this.send('delete', () =>
        this.client.send(
          new DeleteObjectCommand({ Bucket: this.cfg.bucket, Key: this.key(o.key) }),
        ),
      );
  }
}
