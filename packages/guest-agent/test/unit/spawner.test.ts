/**
 * The native spawner helper and its client, on this host (no sandbox): the
 * helper is compiled into a temp dir exactly as the guest bundle compiles it.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, describe, test } from 'node:test';
import type { ExecEvent } from '@warren/protocol/guest';
import { ProcessTable } from '../../src/processes';
import { Spawner, type SpawnedChild, type SpawnOptions } from '../../src/spawner';

const SOURCE = fileURLToPath(new URL('../../native/spawner.c', import.meta.url));
const SPAWNER_MODULE = fileURLToPath(new URL('../../src/spawner.ts', import.meta.url));

/** No test may hang the run; cleanup below still happens. */
const T = { timeout: 30_000 };
let dir: string;
let helperPath: string;
const spawners: Spawner[] = [];
/** Process groups started by a test; killed afterwards whatever happened. */
const groups = new Set<number>();

function newSpawner(path = helperPath): Spawner {
  const s = new Spawner({ path });
  spawners.push(s);
  return s;
}

interface Result {
  child: SpawnedChild;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
}

function start(spawner: Spawner, cmd: string, args: string[], extra: Partial<SpawnOptions> = {}) {
  const child = spawner.spawn({ cmd, args, env: process.env, cwd: dir, ...extra });
  child.on('spawn', () => child.pid && groups.add(child.pid));
  return child;
}

function collect(child: SpawnedChild): Promise<Result> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) =>
      resolve({ child, code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err) }),
    );
  });
}

function run(spawner: Spawner, cmd: string, args: string[], stdin?: string | Buffer) {
  const child = start(spawner, cmd, args);
  if (stdin !== undefined) child.writeStdin(stdin);
  child.closeStdin();
  return collect(child);
}

function spawnError(child: SpawnedChild): Promise<NodeJS.ErrnoException> {
  return new Promise((resolve, reject) => {
    child.once('error', resolve);
    child.once('spawn', () => reject(new Error('expected a spawn failure')));
  });
}

/** Pids (zombies included) whose process group is `pgid`. */
async function groupMembers(pgid: number): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    // Fields after "(comm)": state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid) pids.push(Number(name));
  }
  return pids;
}

async function waitFor(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'warren-spawner-'));
  helperPath = join(dir, 'spawner');
  execFileSync('gcc', ['-static', '-O2', '-Wall', '-Wextra', '-Werror', '-o', helperPath, SOURCE]);
});

afterEach(() => {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  groups.clear();
});

after(async () => {
  for (const s of spawners) s.close();
  await rm(dir, { recursive: true, force: true });
});

describe('Spawner with the helper', () => {
  test('stdout, stderr and exit codes', T, async () => {
    const spawner = newSpawner();
    const r = await run(spawner, 'sh', ['-c', 'echo out; echo err >&2; exit 7']);
    assert.equal(spawner.backend, 'helper');
    assert.equal(r.stdout.toString(), 'out\n');
    assert.equal(r.stderr.toString(), 'err\n');
    assert.deepEqual([r.code, r.signal], [7, null]);
    assert.ok(r.child.pid && r.child.pid > 0);
    const ok = await run(spawner, 'echo', ['a b', 'c']);
    assert.deepEqual([ok.code, ok.stdout.toString()], [0, 'a b c\n']);
  });

  test('death by signal, cwd and env', T, async () => {
    const spawner = newSpawner();
    const killed = await run(spawner, 'sh', ['-c', 'kill -TERM $$']);
    assert.deepEqual([killed.code, killed.signal], [null, 'SIGTERM']);
    const child = start(spawner, 'sh', ['-c', 'pwd; echo "$FOO"'], {
      env: { PATH: process.env.PATH, FOO: 'bar baz' },
    });
    child.closeStdin();
    assert.equal((await collect(child)).stdout.toString(), `${dir}\nbar baz\n`);
  });

  test('stdin round trip through cat, large and in pieces', T, async () => {
    const spawner = newSpawner();
    const small = await run(spawner, 'cat', [], 'hello\nworld');
    assert.equal(small.stdout.toString(), 'hello\nworld');

    const big = randomBytes(3 * 1024 * 1024);
    const child = start(spawner, 'cat', []);
    const done = collect(child);
    for (let i = 0; i < big.length; i += 100_000) child.writeStdin(big.subarray(i, i + 100_000));
    child.closeStdin();
    const r = await done;
    assert.equal(r.code, 0);
    assert.ok(r.stdout.equals(big), 'cat echoed stdin unchanged');
  });

  test('a program that never reads stdin does not block the helper', T, async () => {
    const spawner = newSpawner();
    const child = start(spawner, 'sleep', ['0.3']);
    child.writeStdin(Buffer.alloc(4 * 1024 * 1024)); // far more than a pipe holds
    const meanwhile = await run(spawner, 'echo', ['still responsive']);
    assert.equal(meanwhile.stdout.toString(), 'still responsive\n');
    child.closeStdin();
    assert.equal((await collect(child)).code, 0);
  });

  test('command not found and not executable', T, async () => {
    const spawner = newSpawner();
    const err = await spawnError(start(spawner, 'warren-no-such-command', []));
    assert.equal(err.code, 'ENOENT');
    assert.equal(err.errno, -2);
    assert.equal(err.syscall, 'spawn warren-no-such-command');
    const file = join(dir, 'not-executable');
    await writeFile(file, 'echo hi\n');
    assert.equal((await spawnError(start(spawner, file, []))).code, 'EACCES');
  });

  test('PATH is looked up in the child env, not the helper env', T, async () => {
    const spawner = newSpawner();
    const bin = join(dir, 'bin');
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, 'warren-hello'), '#!/bin/sh\necho "hello $1"\n');
    await chmod(join(bin, 'warren-hello'), 0o755);
    const child = start(spawner, 'warren-hello', ['there'], {
      env: { PATH: `${bin}:${process.env.PATH}` },
    });
    child.closeStdin();
    assert.equal((await collect(child)).stdout.toString(), 'hello there\n');
    // A script without a #! line runs with /bin/sh, as with execvp.
    await writeFile(join(bin, 'warren-plain'), 'echo plain\n');
    await chmod(join(bin, 'warren-plain'), 0o755);
    const plain = start(spawner, 'warren-plain', [], { env: { PATH: bin } });
    plain.closeStdin();
    assert.equal((await collect(plain)).stdout.toString(), 'plain\n');
  });

  test('SIGKILL reaches the whole process group and orphans are reaped', T, async () => {
    const spawner = newSpawner();
    const child = start(spawner, 'sh', ['-c', 'sleep 100 & sleep 100']);
    child.closeStdin();
    const done = collect(child);
    await new Promise<void>((r) => child.once('spawn', () => r()));
    const pgid = child.pid ?? 0;
    await waitFor(async () => (await groupMembers(pgid)).length >= 3); // sh and two sleeps
    child.kill('SIGKILL');
    const r = await done;
    assert.equal(r.signal, 'SIGKILL');
    // Gone, zombies included: the helper is the subreaper of the orphaned sleep.
    await waitFor(async () => (await groupMembers(pgid)).length === 0);
  });

  test('a 5 MB output arrives complete and in order', T, async () => {
    const spawner = newSpawner();
    const data = randomBytes(5 * 1024 * 1024);
    const file = join(dir, 'big.bin');
    await writeFile(file, data);
    const r = await run(spawner, 'head', ['-c', String(data.length), file]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.length, data.length);
    assert.ok(r.stdout.equals(data));
  });

  test('50 concurrent spawns', T, async () => {
    const spawner = newSpawner();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => run(spawner, 'sh', ['-c', `echo ${i}; exit ${i % 5}`])),
    );
    results.forEach((r, i) => {
      assert.equal(r.stdout.toString(), `${i}\n`);
      assert.equal(r.code, i % 5);
    });
    assert.equal(new Set(results.map((r) => r.child.pid)).size, 50);
  });

  test('release stops waiting for a grandchild that holds the pipes', T, async () => {
    const spawner = newSpawner();
    const child = start(spawner, 'sh', ['-c', 'sleep 100 & echo started']);
    child.closeStdin();
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b));
    const [code] = await new Promise<[number | null]>((r) => child.once('exit', (c) => r([c])));
    assert.equal(code, 0);
    child.release();
    await new Promise((r) => child.once('close', r));
    assert.equal(out, 'started\n');
  });

  test('the helper keeps the event loop alive only while children run', T, async () => {
    const script = join(dir, 'alone.mts');
    await writeFile(
      script,
      `import { Spawner } from ${JSON.stringify(SPAWNER_MODULE)};
const s = new Spawner({ path: ${JSON.stringify(helperPath)} });
// Nothing else keeps this process alive while the child sleeps.
const c = s.spawn({ cmd: 'sh', args: ['-c', 'sleep 0.3; echo x'], env: process.env, cwd: '/' });
c.closeStdin();
c.stdout.on('data', (b) => process.stdout.write(b));
c.stderr.resume();
c.on('close', (code) => process.stdout.write(s.backend + ' ' + code + '\\n'));
`,
    );
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', script], { timeout: 20_000 }, (err, stdout) =>
        err ? reject(err) : resolve(stdout),
      );
    });
    assert.equal(out, 'x\nhelper 0\n');
  });
});

describe('Spawner fallback to child_process', () => {
  test('used when the helper binary is missing', T, async () => {
    const spawner = newSpawner(join(dir, 'missing-spawner'));
    const r = await run(spawner, 'sh', ['-c', 'cat; echo err >&2; exit 3'], 'piped');
    assert.equal(spawner.backend, 'fallback');
    assert.deepEqual([r.code, r.stdout.toString(), r.stderr.toString()], [3, 'piped', 'err\n']);
    assert.equal((await spawnError(start(spawner, 'warren-no-such-command', []))).code, 'ENOENT');
  });

  test('takes over pending spawns when the helper dies', T, async () => {
    const dying = join(dir, 'dying-spawner');
    await writeFile(dying, '#!/bin/sh\nexit 1\n');
    await chmod(dying, 0o755);
    const spawner = newSpawner(dying);
    const r = await run(spawner, 'cat', [], 'replayed');
    assert.equal(spawner.backend, 'fallback');
    assert.deepEqual([r.code, r.stdout.toString()], [0, 'replayed']);
  });
});

describe('GuestProcess through the helper', () => {
  function table(): ProcessTable {
    return new ProcessTable(() => ({ PATH: process.env.PATH }), newSpawner());
  }

  async function events(tbl: ProcessTable, spec: Parameters<ProcessTable['start']>[0]) {
    const proc = await tbl.start({ cwd: dir, ...spec });
    if (proc.info.pid) groups.add(proc.info.pid);
    const seen: ExecEvent[] = [];
    proc.subscribe((e) => seen.push(e));
    await proc.exited;
    return { proc, seen, exit: seen.find((e) => e.type === 'exit') };
  }

  test('output, stdin and exit code', T, async () => {
    const { seen, exit } = await events(table(), {
      cmd: 'sh',
      args: ['-c', 'cat; echo oops >&2; exit 4'],
      stdin: 'in',
    });
    assert.equal(seen[0]?.type, 'start');
    const text = (type: string) =>
      seen.map((e) => (e.type === type && 'data' in e ? e.data : '')).join('');
    assert.equal(text('stdout'), 'in');
    assert.equal(text('stderr'), 'oops\n');
    assert.ok(exit?.type === 'exit' && exit.exit_code === 4 && !exit.timed_out);
  });

  test('command not found is exit code 127 with a message', T, async () => {
    const { proc, seen, exit } = await events(table(), { cmd: 'warren-no-such-command', args: [] });
    assert.deepEqual(seen[0], {
      type: 'stderr',
      data: 'warren: warren-no-such-command: command not found\n',
    });
    assert.ok(exit?.type === 'exit' && exit.exit_code === 127);
    assert.equal(proc.info.pid, 0);
  });

  test('timeout kills the group: 137, timed_out', T, async () => {
    const t0 = Date.now();
    const { proc, exit } = await events(table(), {
      cmd: 'sh',
      args: ['-c', 'sleep 100 & sleep 100'],
      timeout_ms: 300,
    });
    assert.ok(exit?.type === 'exit');
    assert.equal(exit.exit_code, 137);
    assert.equal(exit.signal, 'SIGKILL');
    assert.equal(exit.timed_out, true);
    assert.ok(Date.now() - t0 < 5000);
    await waitFor(async () => (await groupMembers(proc.info.pid)).length === 0);
  });

  test('background: writeStdin, then killGroup', T, async () => {
    const tbl = table();
    const proc = await tbl.start({ cmd: 'cat', args: [], cwd: dir, background: true });
    groups.add(proc.info.pid);
    let out = '';
    proc.subscribe((e) => {
      if (e.type === 'stdout') out += e.data;
    });
    proc.writeStdin('one ', false);
    proc.writeStdin('two', false);
    await waitFor(async () => out === 'one two');
    assert.equal(tbl.list().length, 1);
    tbl.get(proc.info.pid).killGroup('SIGTERM');
    await proc.exited;
    assert.equal(proc.info.exit_code, 128 + 15);
    assert.equal(proc.info.signal, 'SIGTERM');
  });

  test('a grandchild holding the pipes delays the exit by the drain grace only', T, async () => {
    const t0 = Date.now();
    const { seen, exit } = await events(table(), {
      cmd: 'sh',
      args: ['-c', 'sleep 100 & echo done'],
    });
    assert.ok(exit?.type === 'exit' && exit.exit_code === 0);
    assert.ok(seen.some((e) => e.type === 'stdout' && e.data === 'done\n'));
    assert.ok(Date.now() - t0 < 2000);
  });
});
