import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  formatLogLine,
  parseSteps,
  readBuild,
  takeEvents,
  type BuildEvent,
} from '../../src/lib/build';

test('the steps text becomes run, workdir and env steps; comments and blank lines are skipped', () => {
  const { steps, error } = parseSteps(
    '# a comment\nmkdir -p /srv\n\n  WORKDIR /srv \nENV MODE=prod=1\necho "a b" > x',
  );
  assert.equal(error, null);
  assert.deepEqual(steps, [
    { run: 'mkdir -p /srv' },
    { workdir: '/srv' },
    { env: { MODE: 'prod=1' } },
    { run: 'echo "a b" > x' },
  ]);
});

test('bad steps text names the line, and no steps is an error', () => {
  assert.match(parseSteps('ls\nWORKDIR srv').error!, /line 2: WORKDIR needs an absolute path/);
  assert.match(parseSteps('ENV NOVALUE').error!, /line 1: ENV needs KEY=value/);
  assert.equal(parseSteps('# only\n\n').error, 'give at least one step');
});

test('a build stream split anywhere gives whole events, in order', () => {
  const lines = [
    { type: 'log', line: 'step 1/1: run: true', step: 1 },
    { type: 'log', line: 'baking snapshot' },
    { type: 'done', template: { name: 't', state: 'ready' } },
  ];
  const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
  for (let cut = 1; cut < text.length; cut += 7) {
    const a = takeEvents(text.slice(0, cut));
    const b = takeEvents(a.rest + text.slice(cut));
    assert.deepEqual([...a.events, ...b.events], lines);
    assert.equal(b.rest, '');
  }
});

test('readBuild reads a streamed response to its end, a last line without a newline included', async () => {
  const chunks = [
    '{"type":"log","li',
    'ne":"one"}\n{"type":"er',
    'ror","code":"TEMPLATE_BUILD_FAILED","message":"exit 2","step":2}',
  ];
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const ch of chunks) c.enqueue(new TextEncoder().encode(ch));
      c.close();
    },
  });
  const seen: BuildEvent[] = [];
  await readBuild(new Response(body), (e) => seen.push(e));
  assert.deepEqual(seen, [
    { type: 'log', line: 'one' },
    { type: 'error', code: 'TEMPLATE_BUILD_FAILED', message: 'exit 2', step: 2 },
  ]);
  assert.equal(formatLogLine(seen[1]!), 'error TEMPLATE_BUILD_FAILED at step 2: exit 2');
});

test('log lines of a step are marked with it; done says how long it took', () => {
  assert.equal(formatLogLine({ type: 'log', line: 'hi', step: 3 }), '[step 3] hi');
  assert.equal(formatLogLine({ type: 'log', line: 'hi' }), 'hi');
  assert.equal(
    formatLogLine({ type: 'done', template: { name: 'py', state: 'ready', build_ms: 12345 } }),
    'done: py is ready (12.3 s)',
  );
});
