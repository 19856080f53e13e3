/**
 * A real S3-protocol server (s3rver) on loopback, for the tests of the S3
 * snapshot store. Its files live in a temporary directory removed on stop.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import S3rver from 's3rver';
import type { S3StoreConfig } from '@warren/host-agent';

export interface TestS3 {
  config: S3StoreConfig;
  stop(): Promise<void>;
}

export async function startS3(bucket = 'warren-snapshots'): Promise<TestS3> {
  const directory = mkdtempSync('/tmp/wt-s3-');
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory,
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
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
