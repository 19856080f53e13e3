/**
 * Terminal sessions: a process on a pseudo-terminal (started by the native
 * spawner), its scrollback, and the viewers attached to it. They live in the
 * agent, so a checkpoint of the sandbox keeps them: after a restore the
 * viewers are gone (their connection was the host's) and attach again.
 */
import { constants } from 'node:os';
import { constants as fsConstants } from 'node:fs';
import { access, readdir, readFile, stat } from 'node:fs/promises';
import { WarrenError } from '@warren/protocol/errors';
import { PTY_SCROLLBACK_BYTES, randomText, type PtyInfo } from '@warren/protocol';
import type { GuestPtyStart } from '@warren/protocol/guest';
import type { SpawnedChild, Spawner } from './spawner';
import { loginShell, resolveUser } from './users';

/** Exited sessions kept (for their exit status and scrollback) until removed or pruned. */
const MAX_EXITED_KEPT = 32;
/** After exit, how long to wait for output when a background job still holds the terminal. */
const DRAIN_GRACE_MS = 100;

export interface PtyViewer {
  /** First: the output offset of the first byte that follows (the replay's start). */
  start(offset: number): void;
  data(chunk: Buffer): void;
  exit(status: { exit_code: number; signal: string | null }): void;
}

/** The last `limit` bytes written, as a list of chunks; offsets count every byte ever written. */
export class Scrollback {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes ever written: the offset of the next one. */
  total = 0;

  constructor(private readonly limit = PTY_SCROLLBACK_BYTES) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    this.total += chunk.length;
    while (this.size > this.limit) {
      const first = this.chunks[0]!;
      const over = this.size - this.limit;
      if (first.length <= over) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.size -= over;
      }
    }
  }

  get bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  /** What is kept from `offset` on (all that is kept when it is older), and where that starts. */
  from(offset = 0): { offset: number; bytes: Buffer } {
    const first = this.total - this.size;
    const start = Math.min(Math.max(offset, first), this.total);
    return { offset: start, bytes: this.bytes.subarray(start - first) };
  }
}

export class PtySession {
  readonly info: PtyInfo;
  readonly scrollback = new Scrollback();
  private readonly viewers = new Set<PtyViewer>();
  /** Milliseconds without a viewer while the agent ran (a checkpoint's downtime is not counted). */
  idleMs = 0;

  constructor(
    readonly child: SpawnedChild,
    spec: GuestPtyStart,
    cmd: string,
    args: string[],
    cwd: string,
  ) {
    this.info = {
      pty_id: `pty_${randomText(16)}`,
      pid: 0,
      cmd,
      args,
      cwd,
      cols: spec.cols,
      rows: spec.rows,
      state: 'running',
      exit_code: null,
      signal: null,
      viewers: 0,
      idle_timeout: spec.idle_timeout,
      created_at: new Date().toISOString(),
      ended_at: null,
    };
    child.stdout.on('data', (chunk: Buffer) => {
      this.scrollback.push(chunk);
      for (const v of this.viewers) v.data(chunk);
    });
    child.once('exit', (code, signal) => {
      const timer = setTimeout(() => {
        child.release();
        this.finish(code, signal);
      }, DRAIN_GRACE_MS);
      child.once('close', () => {
        clearTimeout(timer);
        this.finish(code, signal);
      });
    });
  }

  get running(): boolean {
    return this.info.state === 'running';
  }

  private finish(code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.running) return;
    this.info.state = 'exited';
    this.info.exit_code = code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
    this.info.signal = signal;
    this.info.ended_at = new Date().toISOString();
    const status = { exit_code: this.info.exit_code, signal };
    for (const v of this.viewers) v.exit(status);
    this.viewers.clear();
    this.info.viewers = 0;
  }

  /**
   * Replays the scrollback (from output offset `since`: what a reconnecting
   * viewer has not seen yet), then follows; an exited session replays and
   * reports its exit.
   */
  attach(viewer: PtyViewer, since?: number): () => void {
    const replay = this.scrollback.from(since);
    viewer.start(replay.offset);
    if (replay.bytes.length) viewer.data(replay.bytes);
    if (!this.running) {
      viewer.exit({ exit_code: this.info.exit_code ?? 0, signal: this.info.signal });
      return () => undefined;
    }
    this.viewers.add(viewer);
    this.info.viewers = this.viewers.size;
    this.idleMs = 0;
    return () => {
      this.viewers.delete(viewer);
      this.info.viewers = this.viewers.size;
    };
  }

  write(data: Buffer): void {
    if (this.running) this.child.writeStdin(data);
  }

  resize(cols: number, rows: number): void {
    if (!this.running) {
      throw new WarrenError('PROCESS_NOT_RUNNING', `terminal ${this.info.pty_id} has exited`);
    }
    this.info.cols = cols;
    this.info.rows = rows;
    this.child.resize(cols, rows);
  }

  /**
   * Kills the session leader's process group, then every other process of its
   * session (a shell's jobs have process groups of their own).
   */
  kill(): void {
    if (!this.running) return;
    this.child.kill('SIGKILL');
    void killSession(this.info.pid);
  }
}

/** SIGKILLs every process whose session id is `sid` (field 6 of /proc/<pid>/stat). */
async function killSession(sid: number): Promise<void> {
  if (!sid) return;
  for (const name of await readdir('/proc').catch(() => [])) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === sid) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    // After the command name in parentheses: state, ppid, pgrp, session, ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[3]) !== sid) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/** Sizes the server has already checked; the guest refuses what the spawner cannot take. */
function checkSize(cols: unknown, rows: unknown): void {
  const ok = (n: unknown) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 65535;
  if (!ok(cols) || !ok(rows))
    throw new WarrenError('INVALID_REQUEST', 'cols and rows must be integers from 1 to 65535');
}

async function executable(path: string): Promise<boolean> {
  return access(path, fsConstants.X_OK).then(
    () => true,
    () => false,
  );
}

/** The user's login shell if it can run, else bash, else sh. */
async function defaultShell(uid: number): Promise<string> {
  const candidates = [await loginShell(uid), '/bin/bash', '/bin/sh'];
  for (const c of candidates) {
    if (c && c.startsWith('/') && !c.endsWith('/nologin') && (await executable(c))) return c;
  }
  return '/bin/sh';
}

export class PtyTable {
  private readonly byId = new Map<string, PtySession>();
  /** Runs only while there are sessions. */
  private sweep: NodeJS.Timeout | null = null;
  private lastSweep = Date.now();

  constructor(
    private readonly baseEnv: () => NodeJS.ProcessEnv,
    private readonly spawner: Spawner,
    private readonly sweepMs = 1000,
  ) {}

  private sweeping(): void {
    if (this.byId.size > 0 && !this.sweep) {
      this.lastSweep = Date.now();
      this.sweep = setInterval(() => this.killIdle(), this.sweepMs);
      this.sweep.unref();
    } else if (this.byId.size === 0 && this.sweep) {
      clearInterval(this.sweep);
      this.sweep = null;
    }
  }

  async create(spec: GuestPtyStart): Promise<PtySession> {
    checkSize(spec.cols, spec.rows);
    const user = spec.user !== undefined ? await resolveUser(spec.user) : undefined;
    const asOther = user !== undefined && (user.uid !== 0 || user.gid !== 0);
    let cwd = spec.cwd ?? (user ? user.home : '/root');
    if (spec.cwd === undefined && !(await stat(cwd).catch(() => null))?.isDirectory()) cwd = '/';
    if (!(await stat(cwd).catch(() => null))?.isDirectory())
      throw new WarrenError('CWD_NOT_FOUND', `working directory ${cwd} does not exist`);
    const cmd = spec.cmd ?? (await defaultShell(user?.uid ?? 0));
    const args = spec.args ?? [];
    const userEnv = user ? { HOME: user.home, USER: user.name, LOGNAME: user.name } : {};
    const env: NodeJS.ProcessEnv = {
      TERM: 'xterm-256color',
      ...this.baseEnv(),
      ...userEnv,
      ...spec.env,
    };
    if (spec.cmd === undefined) env.SHELL = cmd;
    // As for processes: another user's terminal starts as the spawner's trampoline.
    const [file, argv] = asOther
      ? [this.spawner.path, ['--as', String(user.uid), String(user.gid), cmd, ...args]]
      : [cmd, args];
    let child: SpawnedChild;
    try {
      child = this.spawner.spawnPty(
        { cmd: file, args: argv, env, cwd },
        { cols: spec.cols, rows: spec.rows },
      );
    } catch (err) {
      if (err instanceof WarrenError) throw err;
      throw new WarrenError('INVALID_REQUEST', (err as Error).message); // a NUL byte in an argument
    }
    const session = new PtySession(child, spec, cmd, args, cwd);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => {
        const reason = err.code === 'ENOENT' ? 'command not found' : `cannot execute (${err.code})`;
        reject(new WarrenError('INVALID_REQUEST', `${cmd}: ${reason}`));
      });
    });
    session.info.pid = child.pid ?? 0;
    this.byId.set(session.info.pty_id, session);
    this.prune();
    this.sweeping();
    return session;
  }

  get(id: string): PtySession {
    const s = this.byId.get(id);
    if (!s) throw new WarrenError('PTY_NOT_FOUND', `no terminal session ${id}`);
    return s;
  }

  list(): PtyInfo[] {
    return [...this.byId.values()].map((s) => s.info);
  }

  remove(id: string): void {
    this.get(id).kill();
    this.byId.delete(id);
    this.sweeping();
  }

  /** Sessions are the sandbox's processes: a reset forgets them (their processes are killed). */
  clear(): void {
    for (const s of this.byId.values()) s.kill();
    this.byId.clear();
    this.sweeping();
  }

  /**
   * Kills sessions without a viewer for longer than their idle timeout. Time
   * is counted in sweeps, each worth at most two intervals, so the hours a
   * sandbox spends hibernated do not count when it wakes.
   */
  private killIdle(): void {
    const now = Date.now();
    const step = Math.min(Math.max(0, now - this.lastSweep), 2 * this.sweepMs);
    this.lastSweep = now;
    for (const [id, s] of this.byId) {
      if (!s.running || s.info.viewers > 0) continue;
      s.idleMs += step;
      if (s.idleMs >= s.info.idle_timeout * 1000) {
        s.kill();
        this.byId.delete(id);
      }
    }
    this.sweeping();
  }

  private prune(): void {
    const exited = [...this.byId.values()].filter((s) => !s.running);
    for (const s of exited.slice(0, Math.max(0, exited.length - MAX_EXITED_KEPT)))
      this.byId.delete(s.info.pty_id);
  }
}
