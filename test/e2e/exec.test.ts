import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

interface Event {
  type: string;
  data?: string;
  pid?: number;
  exit_code?: number;
  timed_out?: boolean;
}

async function ndjson(res: Response): Promise<Array<Event & { at: number }>> {
  const out: Array<Event & { at: number }> = [];
  let buf = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line) out.push({ ...(JSON.parse(line) as Event), at: Date.now() });
    }
  }
  return out;
}

describe('exec and processes (real gVisor)', () => {
  let p: TestPlatform;
  let id: string;
  before(async () => {
    p = await startTestPlatform();
    id = await createSandbox(p, { template: 'base', env: { SANDBOX_LEVEL: 'from-create' } });
  });
  after(async () => {
    await p?.stop();
  });

  it('returns exit code, stdout and stderr separately', async () => {
    const r = await exec(p, id, { cmd: 'sh', args: ['-c', 'echo out; echo err >&2; exit 7'] });
    assert.deepEqual([r.exit_code, r.stdout, r.stderr, r.timed_out], [7, 'out\n', 'err\n', false]);
    assert.ok(r.pid > 0);
  });

  it('passes env (sandbox-wide and per exec), cwd and stdin', async () => {
    const r = await exec(p, id, {
      cmd: 'sh',
      args: ['-c', 'echo "$SANDBOX_LEVEL $PER_EXEC $(pwd)"; cat'],
      env: { PER_EXEC: 'from-exec' },
      cwd: '/tmp',
      stdin: 'from-stdin',
    });
    assert.equal(r.stdout, 'from-create from-exec /tmp\nfrom-stdin');
  });

  it('a missing binary is a normal result with exit code 127', async () => {
    const r = await exec(p, id, { cmd: 'no-such-binary', args: ['x'] });
    assert.equal(r.exit_code, 127);
    assert.match(r.stderr, /no-such-binary: command not found/);
  });

  it('a missing working directory is a typed error', async () => {
    const res = await p.api(`/v1/sandboxes/${id}/exec`, {
      method: 'POST',
      json: { cmd: 'true', cwd: '/does/not/exist' },
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'CWD_NOT_FOUND');
  });

  it('runs processes as another user of the sandbox', async () => {
    const sandbox = id;
    const runId = (body: Record<string, unknown>) => exec(p, sandbox, { cmd: 'id', ...body });
    assert.equal((await runId({ args: ['-u'], user: 'nobody' })).stdout, '65534\n');
    assert.equal((await runId({ args: ['-u'] })).stdout, '0\n');
    assert.equal((await runId({ args: ['-u'], user: 'root' })).stdout, '0\n');
    assert.equal((await runId({ args: ['-u'], user: '1234:1234' })).stdout, '1234\n');
    assert.equal((await runId({ args: ['-g'], user: '1234:1234' })).stdout, '1234\n');
    const file = await exec(p, sandbox, {
      cmd: 'sh',
      args: ['-c', 'echo hi > /tmp/by-nobody && stat -c %u /tmp/by-nobody && echo "$HOME $USER"'],
      user: 'nobody',
    });
    assert.equal(file.stdout, '65534\n/nonexistent nobody\n');
    // The switch happens in place (same pid and process group), so a timeout still kills it.
    const slow = await exec(p, sandbox, {
      cmd: 'sleep',
      args: ['30'],
      user: 'nobody',
      timeout: 0.3,
    });
    assert.deepEqual([slow.timed_out, slow.exit_code], [true, 137]);
    const missing = await exec(p, sandbox, { cmd: 'no-such-binary', user: 'nobody' });
    assert.equal(missing.exit_code, 127);
    assert.match(missing.stderr, /no-such-binary: command not found/);
    const res = await p.api(`/v1/sandboxes/${sandbox}/exec`, {
      method: 'POST',
      json: { cmd: 'id', user: 'no-such-user' },
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'USER_NOT_FOUND');
  });

  it('kills the whole process group on timeout', async () => {
    const started = Date.now();
    const r = await exec(p, id, { cmd: 'sh', args: ['-c', 'sleep 30 & sleep 30'], timeout: 0.5 });
    assert.equal(r.timed_out, true);
    assert.equal(r.exit_code, 137);
    assert.ok(Date.now() - started < 10_000);
    const ps = await exec(p, id, {
      cmd: 'sh',
      args: ['-c', 'ps -eo comm 2>/dev/null || ls /proc'],
    });
    assert.ok(!/\bsleep\b/.test(ps.stdout), `no sleep left: ${ps.stdout}`);
  });

  it('streams stdout and stderr events as they happen, then the exit', async () => {
    const res = await p.api(`/v1/sandboxes/${id}/exec/stream`, {
      method: 'POST',
      json: {
        cmd: 'sh',
        args: ['-c', 'echo one; sleep 0.6; echo two >&2; sleep 0.6; echo three; exit 2'],
      },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const events = await ndjson(res);
    assert.deepEqual(
      events.map((e) => [e.type, e.data ?? e.exit_code ?? 'pid']),
      [
        ['start', 'pid'],
        ['stdout', 'one\n'],
        ['stderr', 'two\n'],
        ['stdout', 'three\n'],
        ['exit', 2],
      ],
    );
    // Streamed, not buffered: the first line arrived well before the last.
    assert.ok(events[3]!.at - events[1]!.at > 800, 'events arrive live');
  });

  it('background processes: start, list, stdin, reattach to output, signal', async () => {
    const started = await p.json(`/v1/sandboxes/${id}/processes`, {
      method: 'POST',
      json: { cmd: 'sh', args: ['-c', 'while read line; do echo "got $line"; done; echo bye'] },
    });
    assert.equal(started.state, 'running');
    const pid = started.pid as number;
    const list = await p.json(`/v1/sandboxes/${id}/processes`);
    assert.ok(list.items.some((x: { pid: number }) => x.pid === pid));

    const stdin = await p.api(`/v1/sandboxes/${id}/processes/${pid}/stdin`, {
      method: 'POST',
      json: { data: 'a\nb\n' },
    });
    assert.equal(stdin.status, 204);
    // Reattach without following: what was printed so far.
    const printedSoFar = async () =>
      (await ndjson(await p.api(`/v1/sandboxes/${id}/processes/${pid}/output?follow=false`)))
        .filter((e) => e.type === 'stdout')
        .map((e) => e.data)
        .join('');
    const sofar = await waitFor(
      async () => {
        const out = await printedSoFar();
        return out.includes('got b') && out;
      },
      { what: 'the process to answer both lines of stdin' },
    );
    assert.equal(sofar, 'got a\ngot b\n');

    // Reattach and follow until exit, while closing stdin from elsewhere.
    const following = p.api(`/v1/sandboxes/${id}/processes/${pid}/output`);
    await p.api(`/v1/sandboxes/${id}/processes/${pid}/stdin`, {
      method: 'POST',
      json: { data: 'c\n', eof: true },
    });
    const all = await ndjson(await following);
    assert.equal(
      all
        .filter((e) => e.type === 'stdout')
        .map((e) => e.data)
        .join(''),
      'got a\ngot b\ngot c\nbye\n',
    );
    assert.equal(all.at(-1)?.type, 'exit');
    const done = await p.json(`/v1/sandboxes/${id}/processes/${pid}`);
    assert.deepEqual([done.state, done.exit_code], ['exited', 0]);

    // Signals reach the process; the exit code reports the signal.
    const sleeper = await p.json(`/v1/sandboxes/${id}/exec`, {
      method: 'POST',
      json: { cmd: 'sleep', args: ['60'], background: true },
    });
    const sig = await p.api(`/v1/sandboxes/${id}/processes/${sleeper.pid}/signal`, {
      method: 'POST',
      json: { signal: 'SIGTERM' },
    });
    assert.equal(sig.status, 204);
    const end = await ndjson(await p.api(`/v1/sandboxes/${id}/processes/${sleeper.pid}/output`));
    assert.equal(end.at(-1)?.exit_code, 143);

    const gone = await p.api(`/v1/sandboxes/${id}/processes/99999`);
    assert.equal(gone.status, 404);
    assert.equal(
      ((await gone.json()) as { error: { code: string } }).error.code,
      'PROCESS_NOT_FOUND',
    );
    const late = await p.api(`/v1/sandboxes/${id}/processes/${pid}/stdin`, {
      method: 'POST',
      json: { data: 'x' },
    });
    assert.equal(late.status, 409);
  });

  it('POST /exec caps what it keeps of huge output; the stream has it all', async () => {
    const r = await exec(p, id, {
      cmd: 'sh',
      args: ['-c', 'head -c 20000000 /dev/zero | tr "\\0" a'],
    });
    assert.equal(r.exit_code, 0);
    assert.ok(r.stdout.startsWith('a'.repeat(1000)));
    assert.match(
      r.stdout,
      /\[warren: output truncated at 16777216 characters; use \/exec\/stream for more\]\n$/,
    );
    const res = await p.api(`/v1/sandboxes/${id}/exec/stream`, {
      method: 'POST',
      json: { cmd: 'sh', args: ['-c', 'head -c 20000000 /dev/zero | tr "\\0" a'] },
    });
    const events = await ndjson(res);
    const total = events.filter((e) => e.type === 'stdout').reduce((n, e) => n + e.data!.length, 0);
    assert.equal(total, 20_000_000);
  });

  it('many concurrent execs on one sandbox all complete', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => exec(p, id, { cmd: 'echo', args: [String(i)] })),
    );
    assert.deepEqual(
      results.map((r) => r.stdout),
      Array.from({ length: 12 }, (_, i) => `${i}\n`),
    );
  });
});
