import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from 'commander';
import {
  collectKeyValue,
  collectVolume,
  parseCpTarget,
  parseKeyValue,
  parsePositiveInt,
} from '../../src/args';
import { relativeTime, table } from '../../src/format';

test('K=V splits at the first "="; values may be empty or contain "="', () => {
  assert.deepEqual(parseKeyValue('A=1'), ['A', '1']);
  assert.deepEqual(parseKeyValue('URL=a=b=c'), ['URL', 'a=b=c']);
  assert.deepEqual(parseKeyValue('EMPTY='), ['EMPTY', '']);
  assert.throws(() => parseKeyValue('NOEQ'), InvalidArgumentError);
  assert.throws(() => parseKeyValue('=v'), InvalidArgumentError);
});

test('repeated K=V options fold into one record, later values winning', () => {
  let acc = collectKeyValue('A=1');
  acc = collectKeyValue('B=2', acc);
  acc = collectKeyValue('A=3', acc);
  assert.deepEqual(acc, { A: '3', B: '2' });
});

test('<sandbox-id>:<path> splits; local paths stay local', () => {
  assert.deepEqual(parseCpTarget('sbx_123:/etc/hosts'), {
    sandboxId: 'sbx_123',
    path: '/etc/hosts',
  });
  assert.deepEqual(parseCpTarget('sbx_1:/a:b'), { sandboxId: 'sbx_1', path: '/a:b' });
  assert.deepEqual(parseCpTarget('./a:b'), { path: './a:b' });
  assert.deepEqual(parseCpTarget('/tmp/x:y'), { path: '/tmp/x:y' });
  assert.deepEqual(parseCpTarget('file.txt'), { path: 'file.txt' });
  assert.deepEqual(parseCpTarget(':/x'), { path: ':/x' });
  assert.throws(() => parseCpTarget('sbx_1:'), InvalidArgumentError);
});

test('numeric options reject junk', () => {
  assert.equal(parsePositiveInt('60'), 60);
  for (const bad of ['0', '-1', '1.5', 'abc', '']) {
    assert.throws(() => parsePositiveInt(bad), InvalidArgumentError, bad);
  }
});

test('relative times and tables', () => {
  const now = Date.parse('2025-01-01T12:00:00Z');
  assert.equal(relativeTime('2025-01-01T11:55:00Z', now), '5m ago');
  assert.equal(relativeTime('2025-01-01T14:00:30Z', now), 'in 2h');
  assert.equal(relativeTime('2025-01-01T12:00:00Z', now), 'now');
  assert.equal(relativeTime('garbage', now), 'garbage');
  assert.equal(
    table(['ID', 'STATE'], [['sbx_long', 'running']]),
    'ID        STATE\nsbx_long  running\n',
  );
});

test('--volume NAME:/PATH[:ro] options collect into attachments', () => {
  let acc = collectVolume('data:/data');
  acc = collectVolume('models:/opt/models:ro', acc);
  assert.deepEqual(acc, [
    { name: 'data', mount_path: '/data', read_only: false },
    { name: 'models', mount_path: '/opt/models', read_only: true },
  ]);
  assert.throws(() => collectVolume('data'), InvalidArgumentError);
  assert.throws(() => collectVolume('data:relative'), InvalidArgumentError);
  assert.throws(() => collectVolume('data:/x:rx'), InvalidArgumentError);
});
