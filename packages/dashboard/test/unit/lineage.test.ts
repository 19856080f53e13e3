import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildLineage, flatten, lineRoot, type LineageSandbox } from '../../src/lib/lineage';

function sbx(id: string, lineage: string[], extra: Partial<LineageSandbox> = {}): LineageSandbox {
  return {
    id,
    state: 'running',
    lineage,
    parent_id: lineage[lineage.length - 1] ?? null,
    snapshot_id: null,
    fork_kind: lineage.length ? 'disk' : null,
    created_at: `2026-01-01T00:00:0${lineage.length}.${id}Z`,
    ...extra,
  };
}

const shape = (n: ReturnType<typeof buildLineage>) =>
  flatten(n).map(({ node, depth }) => `${'  '.repeat(depth)}${node.kind}:${node.id}`);

test('a sandbox made from a template is a tree of one', () => {
  const a = sbx('a', []);
  assert.equal(lineRoot(a), 'a');
  assert.deepEqual(shape(buildLineage(a, [a], [])), ['sandbox:a']);
});

test('forks of forks hang under their parents, from any member of the line', () => {
  const a = sbx('a', []);
  const b = sbx('b', ['a']);
  const c = sbx('c', ['a']);
  const d = sbx('d', ['a', 'b']);
  const other = sbx('z', []);
  const want = ['sandbox:a', '  sandbox:b', '    sandbox:d', '  sandbox:c'];
  assert.deepEqual(shape(buildLineage(d, [a, b, c, d, other], [])), want);
  assert.deepEqual(shape(buildLineage(a, [other, d, c, b, a], [])), want);
});

test('snapshots sit under their sandbox, and restores from them under the snapshot', () => {
  const a = sbx('a', []);
  const r = sbx('r', ['a'], { snapshot_id: 'snap1', fork_kind: 'memory' });
  const tree = buildLineage(
    a,
    [a, r],
    [
      { id: 'snap1', sandbox_id: 'a', created_at: '2026-01-01T00:00:00.5Z' },
      { id: 'snapX', sandbox_id: 'elsewhere', created_at: '2026-01-01T00:00:00Z' },
    ],
  );
  assert.deepEqual(shape(tree), ['sandbox:a', '  snapshot:snap1', '    sandbox:r']);
});

test('purged ancestors are drawn as missing nodes in their place', () => {
  const d = sbx('d', ['a', 'b', 'c']);
  const e = sbx('e', ['a', 'b']);
  assert.deepEqual(shape(buildLineage(d, [e], [])), [
    'missing:a',
    '  missing:b',
    '    missing:c',
    '      sandbox:d',
    '    sandbox:e',
  ]);
});
