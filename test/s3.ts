/**
 * A real S3-protocol server (s3rver) on loopback, for the tests of the S3
 * snapshot store. Its files live in a temporary directory removed on stop.
 */
import { mkdtempSync } from 'node:fs';
import { startLocalS3, type LocalS3 } from '../packages/server/src/hosts/local-s3';

export type TestS3 = LocalS3;

export function startS3(bucket = 'warren-snapshots'): Promise<TestS3> {
  return startLocalS3(mkdtempSync('/tmp/wt-s3-'), bucket);
}
