import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  age,
  formatBytes,
  formatDuration,
  joinPath,
  parentDir,
  parseLabels,
  previewKind,
  ttlCountdown,
} from '../../src/lib/format';

test('durations show their two largest units', () => {
  assert.equal(formatDuration(0), '0s');
  assert.equal(formatDuration(9.7), '9s');
  assert.equal(formatDuration(725), '12m 05s');
  assert.equal(formatDuration(3600 + 5 * 60), '1h 05m');
  assert.equal(formatDuration(2 * 86400 + 3 * 3600 + 59), '2d 3h');
  assert.equal(formatDuration(-5), '0s');
});

test('the TTL countdown counts down to expired, and says so for persistent and stopped', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const at = (s: number) => new Date(now + s * 1000).toISOString();
  const base = { state: 'running', persistent: false };
  assert.deepEqual(ttlCountdown({ ...base, expires_at: at(725) }, now), {
    text: '12m 05s',
    tone: 'ok',
  });
  assert.deepEqual(ttlCountdown({ ...base, expires_at: at(30) }, now), {
    text: '30s',
    tone: 'soon',
  });
  assert.deepEqual(ttlCountdown({ ...base, expires_at: at(-1) }, now), {
    text: 'expired',
    tone: 'expired',
  });
  assert.equal(
    ttlCountdown({ ...base, persistent: true, expires_at: at(5) }, now).text,
    'persistent',
  );
  assert.equal(ttlCountdown({ ...base, state: 'stopped', expires_at: at(5) }, now).text, '-');
  assert.equal(age(at(-65), now), '1m 05s ago');
});

test('labels parse from k=v text and refuse a bare word', () => {
  assert.deepEqual(parseLabels('team=red, env = dev\nx=a=b'), {
    labels: { team: 'red', env: 'dev', x: 'a=b' },
    error: null,
  });
  assert.equal(parseLabels('').error, null);
  assert.match(parseLabels('team').error ?? '', /not key=value/);
});

test('paths, sizes and previews', () => {
  assert.equal(parentDir('/root/a/b.txt'), '/root/a');
  assert.equal(parentDir('/root'), '/');
  assert.equal(parentDir('/'), '/');
  assert.equal(joinPath('/', 'x'), '/x');
  assert.equal(joinPath('/root/', 'x'), '/root/x');
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(300 * 1024 * 1024), '300 MiB');
  assert.equal(previewKind('a.PNG'), 'image');
  assert.equal(previewKind('notes.md'), 'text');
  assert.equal(previewKind('Makefile'), 'text');
  assert.equal(previewKind('a.tar.gz'), null);
});
