/**
 * Terminal sessions of the guest agent on this host: the native spawner is
 * compiled into a temp dir as the guest bundle compiles it, and real shells
 * run on real pseudo-terminals.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { PtyTable, Scrollback, type PtySession } from '../../src/pty';
import { Spawner } from '../../src/spawner';

const SOURCE = fileURLToPath(new URL('../../native/spawner.c', import.meta.url));
const T = { timeout: 30_000 };
let dir: string;
let spawner: Spawner;
let table: PtyTable;

interface Watch {
  text: () => string;
  exit: Promise<{ exit_code: number; signal: string | null }>;
  detach: () => void;
}

function watch(session: PtySession): Watch {
  let out = '';
  let onExit!: (s: { exit_code: number; signal: string | null }) => void;
  const exit = new Promise<{ exit_code: number; signal: string | null }>((r) => (onExit = r));
  const detach = session.attach({
    start: () => undefined,
    data: (b) => (out += b.toString()),
    exit: (s) => onExit(s),
  });
  return { text: () => out, exit, detach };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('guest terminal sessions', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'warren-pty-'));
    const path = join(dir, 'spawner');
    execFileSync('gcc', ['-static', '-O2', '-Wall', '-Wextra', '-Werror', '-o', path, SOURCE]);
    spawner = new Spawner({ path });
    table = new PtyTable(() => ({ PATH: process.env.PATH, PS1: '$ ' }), spawner, 50);
  });
  after(async () => {
    table.clear();
    spawner.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('a shell on a terminal: echo, resize, replay, exit code', T, async () => {
    const s = await table.create({
      cols: 80,
      rows: 24,
      cmd: '/bin/sh',
      cwd: dir,
      idle_timeout: 60,
    });
    assert.ok(s.info.pid > 0);
    const a = watch(s);
    s.write(Buffer.from('test -t 0 && echo "tty-$TERM"; echo hi-$((6*7))\n'));
    await until(() => a.text().includes('hi-42'), 'the echo');
    assert.match(a.text(), /tty-xterm-256color/);
    s.resize(101, 33);
    s.write(Buffer.from('stty size\n'));
    await until(() => a.text().includes('33 101'), 'the new size');
    // A second viewer gets the scrollback first.
    const b = watch(s);
    assert.match(b.text(), /hi-42/);
    assert.equal(s.info.viewers, 2);
    s.write(Buffer.from('exit 3\n'));
    assert.deepEqual(await a.exit, { exit_code: 3, signal: null });
    assert.deepEqual(await b.exit, { exit_code: 3, signal: null });
    assert.equal(table.get(s.info.pty_id).info.state, 'exited');
  });

  test('kill, unknown command, bad size', T, async () => {
    const s = await table.create({
      cols: 80,
      rows: 24,
      cmd: '/bin/sh',
      cwd: dir,
      idle_timeout: 60,
    });
    const a = watch(s);
    table.remove(s.info.pty_id);
    assert.equal((await a.exit).signal, 'SIGKILL');
    assert.throws(() => table.get(s.info.pty_id), { code: 'PTY_NOT_FOUND' });
    await assert.rejects(
      table.create({ cols: 80, rows: 24, cmd: 'no-such-program', cwd: dir, idle_timeout: 60 }),
      { code: 'INVALID_REQUEST' },
    );
    await assert.rejects(table.create({ cols: 0, rows: 24, cwd: dir, idle_timeout: 60 }), {
      code: 'INVALID_REQUEST',
    });
  });

  test("another user's session; kill reaches the shell's jobs too", T, async () => {
    const s = await table.create({
      cols: 80,
      rows: 24,
      cmd: '/bin/sh',
      user: '65534:65534',
      cwd: dir,
      idle_timeout: 60,
    });
    const a = watch(s);
    s.write(Buffer.from('echo "uid-$(id -u)"; set -m; sleep 1000 & echo "job-$!"\n'));
    await until(() => /job-\d+/.test(a.text()), 'the job');
    assert.match(a.text(), /uid-65534/);
    const job = Number(/job-(\d+)/.exec(a.text())![1]);
    table.remove(s.info.pty_id);
    await a.exit;
    await until(() => {
      try {
        process.kill(job, 0);
        return false;
      } catch {
        return true;
      }
    }, 'the job to be killed');
  });

  test('a session nobody watches is killed after its idle timeout', T, async () => {
    const s = await table.create({ cols: 80, rows: 24, cmd: '/bin/sh', cwd: dir, idle_timeout: 1 });
    const a = watch(s);
    await new Promise((r) => setTimeout(r, 1300));
    assert.equal(s.running, true, 'a watched session is not idle');
    a.detach();
    await until(() => !s.running, 'the idle kill');
    assert.throws(() => table.get(s.info.pty_id), { code: 'PTY_NOT_FOUND' });
  });

  test('the scrollback keeps the last bytes', () => {
    const sb = new Scrollback(10);
    sb.push(Buffer.from('0123456'));
    sb.push(Buffer.from('789abc'));
    assert.equal(sb.bytes.toString(), '3456789abc');
    assert.deepEqual(sb.from(10), { offset: 10, bytes: Buffer.from('abc') });
    assert.deepEqual(sb.from(0), { offset: 3, bytes: Buffer.from('3456789abc') });
    assert.deepEqual(sb.from(99), { offset: 13, bytes: Buffer.alloc(0) });
  });
});
