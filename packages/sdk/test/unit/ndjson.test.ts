import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { WarrenError, parseNdjson } from '../../src/index';
import { sendChunks, startFakeApi, type FakeApi } from '../helpers/fake-api';

async function collect(pieces: (string | Uint8Array)[]): Promise<unknown[]> {
  const enc = new TextEncoder();
  async function* body() {
    for (const p of pieces) yield typeof p === 'string' ? enc.encode(p) : p;
  }
  const out: unknown[] = [];
  for await (const e of parseNdjson(body())) out.push(e);
  return out;
}

test('lines split across chunks are joined; blank lines and CRLF are tolerated', async () => {
  const events = await collect(['{"a":', '1}\n{"b"', ':2}\r\n', '\n', '{"c":3}\n{"d":', '4}']);
  assert.deepEqual(events, [{ a: 1 }, { b: 2 }, { c: 3 }, { d: 4 }]);
});

test('a multi-byte character split between chunks survives', async () => {
  const bytes = new TextEncoder().encode('{"data":"héllo ✓"}\n');
  const cut = bytes.indexOf(0xc3) + 1; // in the middle of "é"
  const events = await collect([bytes.subarray(0, cut), bytes.subarray(cut)]);
  assert.deepEqual(events, [{ data: 'héllo ✓' }]);
});

test('a malformed line is an INTERNAL WarrenError', async () => {
  await assert.rejects(collect(['{"ok":1}\nnot json\n']), (err: unknown) => {
    return err instanceof WarrenError && err.code === 'INTERNAL' && /not json/.test(err.message);
  });
});

let api: FakeApi;
before(async () => {
  api = await startFakeApi(async (_req, res) => {
    const line = Buffer.from('{"type":"stdout","data":"ünï"}\n{"type":"exit"}\n');
    // Every byte its own network chunk: the worst case for a line parser.
    await sendChunks(
      res,
      [...line].map((b) => Buffer.from([b])),
    );
  });
});
after(() => api.close());

test('parses a real HTTP body that arrives one byte per chunk', async () => {
  const res = await fetch(api.url);
  const events: unknown[] = [];
  for await (const e of parseNdjson(res.body!)) events.push(e);
  assert.deepEqual(events, [{ type: 'stdout', data: 'ünï' }, { type: 'exit' }]);
});
