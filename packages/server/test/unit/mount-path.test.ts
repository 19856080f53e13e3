import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WarrenError } from '@warren/protocol';
import { checkMountPath } from '../../src/volume-service';

const refused = (path: string) => () =>
  assert.throws(
    () => checkMountPath(path),
    (err: unknown) => err instanceof WarrenError && err.code === 'INVALID_MOUNT_PATH',
    path,
  );

test('volume mount paths: absolute, normal, and clear of reserved places', () => {
  for (const ok of ['/data', '/srv/keep', '/home/user/work', '/opt/models', '/run/data', '/tmp/x'])
    assert.doesNotThrow(() => checkMountPath(ok), ok);
  for (const bad of [
    'data',
    '',
    '/',
    '/tmp',
    '/run',
    '/opt',
    '/opt/warren',
    '/opt/warren/x',
    '/run/warren',
    '/run/warren/volumes/x',
    '/proc/self',
    '/sys',
    '/dev/shm',
    '/a/../b',
    '/a/./b',
    '//a',
    '/a/',
    '/a\0b',
  ])
    refused(bad)();
});
