/**
 * An S3-protocol server (s3rver) on loopback, its files under `dir`
 * (emptied at start, removed at stop): the snapshot store of `warren cluster
 * up` and of the tests. s3rver is a development dependency.
 */
import { mkdirSync, rmSync } from 'node:fs';
import type { S3StoreConfig } from '@warren/host-agent';

export interface LocalS3 {
  config: S3StoreConfig & { bucket: string; prefix: string; endpoint: string };
  stop(): Promise<void>;
}

export async function startLocalS3(dir: string, bucket = 'warren-snapshots'): Promise<LocalS3> {
  const { default: S3rver } = await import('s3rver').catch(() => {
    throw new Error('s3rver (a development dependency) is not installed: run npm install');
  });
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory: dir,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const { port } = await server.run();
  return {
    config: {
      bucket,
      prefix: 'warren/',
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      // s3rver's fixed development credentials.
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
    },
    async stop() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
