import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WarrenError } from '@warren/protocol';
import {
  MAX_RESULTS,
  diagnosticLines,
  hoverText,
  locations,
  symbolLines,
  toPosition,
} from '../../src/lsp/compact';

const range = (line: number, character: number) => ({
  start: { line, character },
  end: { line, character: character + 1 },
});

describe('compact LSP answers', () => {
  it('turns 1-based positions into LSP ones and refuses those past the text', () => {
    const text = 'ab\nlonger line\n';
    assert.deepEqual(toPosition(text, 2, 3), { line: 1, character: 2 });
    assert.deepEqual(toPosition(text, 2, 12), { line: 1, character: 11 }); // end of the line
    assert.deepEqual(toPosition(text, 3, 1), { line: 2, character: 0 }); // after the last newline
    const code = (f: () => unknown) =>
      assert.throws(
        f,
        (e: unknown) => e instanceof WarrenError && e.code === 'POSITION_OUT_OF_RANGE',
      );
    code(() => toPosition(text, 4, 1));
    code(() => toPosition(text, 1, 4));
    code(() => toPosition('a\r\nb', 1, 3)); // the CR is not a column
  });

  it('lists locations and links as path:line:col, once each', () => {
    const loc = { uri: 'file:///root/p/a%20b.py', range: range(0, 4) };
    assert.equal(locations(loc, '/root/p').text, '/root/p/a b.py:1:5');
    const many = locations([loc, loc, { uri: 'file:///x.py', range: range(9, 0) }], '/');
    assert.equal(many.text, '/root/p/a b.py:1:5\n/x.py:10:1');
    assert.equal(many.count, 2);
    const link = { targetUri: 'file:///y.py', targetSelectionRange: range(2, 3) };
    assert.equal(locations([link], '/').text, '/y.py:3:4');
    assert.deepEqual(locations(null, '/'), { text: '', count: 0, truncated: false, root: '/' });
    const lots = Array.from({ length: MAX_RESULTS + 5 }, (_, i) => ({
      uri: 'file:///z.py',
      range: range(i, 0),
    }));
    const cut = locations(lots, '/');
    assert.equal(cut.count, MAX_RESULTS + 5);
    assert.equal(cut.truncated, true);
    assert.equal(cut.text.split('\n').length, MAX_RESULTS);
  });

  it('gives hover text without code fences', () => {
    const h = hoverText(
      { contents: { kind: 'markdown', value: '```python\ngreet(name)\n```\n\nSay hi.' } },
      '/',
    );
    assert.equal(h.text, 'greet(name)\n\nSay hi.');
    assert.equal(hoverText({ contents: [] }, '/').count, 0);
    assert.equal(hoverText(null, '/').text, '');
  });

  it('sorts diagnostics and names their severity and source', () => {
    const d = diagnosticLines(
      '/a.py',
      [
        { range: range(4, 11), severity: 1, message: "undefined name 'x'", source: 'pyflakes' },
        { range: range(0, 0), severity: 2, message: 'unused\nimport' },
      ],
      '/',
    );
    assert.equal(
      d.text,
      "/a.py:1:1: warning: unused import\n/a.py:5:12: error: undefined name 'x' (pyflakes)",
    );
  });

  it('flattens nested symbols and keeps flat ones with their container', () => {
    const nested = symbolLines(
      '/a.py',
      [
        {
          name: 'C',
          kind: 5,
          selectionRange: range(0, 6),
          children: [{ name: 'm', kind: 6, selectionRange: range(1, 8) }],
        },
      ],
      '/',
    );
    assert.equal(nested.text, '/a.py:1:7 class C\n/a.py:2:9 method C.m');
    const flat = symbolLines(
      '/a.py',
      [
        { name: 'f', kind: 12, location: { uri: 'file:///a.py', range: range(3, 4) } },
        {
          name: 'v',
          kind: 13,
          containerName: 'f',
          location: { uri: 'file:///a.py', range: range(4, 4) },
        },
      ],
      '/',
    );
    assert.equal(flat.text, '/a.py:4:5 function f\n/a.py:5:5 variable f.v');
  });
});
