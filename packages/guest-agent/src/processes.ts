/**
 * The guest's process table. Every exec is a process here; foreground ones are
 * forgotten once their exit has been delivered, background ones stay listed
 * (with a bounded replay buffer of their output) until removed.
 */
import { constants } from 'node:os';
import { readdir, stat } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { WarrenError } from '@warren/protocol/errors';
import type { ExecEvent, GuestProcessStart, ProcessInfo } from '@warren/protocol/guest';
import { Spawner, type SpawnedChild } from './spawner';
import { resolveUser, type ResolvedUser } from './users';

const REPLAY_LIMIT_BYTES = 1024 * 1024;
const MAX_EXITED_KEPT = 256;
/** After exit, how long to wait for stdio to drain when a grandchild still holds the pipes. */
const DRAIN_GRACE_MS = 100;

type Listener = (event: ExecEvent) => void;

export class GuestProcess {
  readonly info: ProcessInfo;
  readonly background: boolean;
  private readonly replay: ExecEvent[] = [];
  private replayBytes = 0;
  private readonly listeners = new Set<Listener>();
  private child: SpawnedChild | null = null;
  private readonly startedAt = Date.now();
  readonly exited: Promise<void>;
  private markExited!: () => void;

  constructor(spec: GuestProcessStart, cwd: string) {
    this.background = spec.background === true;
    this.info = {
      pid: 0,
      cmd: spec.cmd,
      args: spec.args,
      cwd,
      state: 'running',
      exit_code: null,
      signal: null,
      timed_out: false,
      started_at: new Date(this.startedAt).toISOString(),
      ended_at: null,
      output_truncated: false,
    };
    this.exited = new Promise((resolve) => (this.markExited = resolve));
  }

  /** Replays buffered events, then follows live ones; returns an unsubscribe function. */
  subscribe(listener: Listener, replay = true): () => void {
    if (replay) for (const e of this.replay) listener(e);
    if (this.info.state === 'running') this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get running(): boolean {
    return this.info.state === 'running';
  }

  emit(event: ExecEvent): void {
    this.replay.push(event);
    if (event.type === 'stdout' || event.type === 'stderr') {
      this.replayBytes += event.data.length;
      while (this.replayBytes > REPLAY_LIMIT_BYTES) {
        const i = this.replay.findIndex((e) => e.type === 'stdout' || e.type === 'stderr');
        if (i < 0) break;
        const [dropped] = this.replay.splice(i, 1);
        if (dropped && (dropped.type === 'stdout' || dropped.type === 'stderr'))
          this.replayBytes -= dropped.data.length;
        this.info.output_truncated = true;
      }
    }
    for (const l of this.listeners) l(event);
  }

  /** Starts the process; resolves once it is running or has failed to start. */
  start(
    spec: GuestProcessStart,
    env: NodeJS.ProcessEnv,
    spawner: Spawner,
    user?: ResolvedUser,
  ): Promise<void> {
    let child: SpawnedChild;
    const args = spec.args ?? [];
    // posix_spawn cannot switch users: another user's process starts as the spawner in
    // trampoline mode, which drops to uid/gid and execs the command in place (same pid).
    const [cmd, argv] = user
      ? [spawner.path, ['--as', String(user.uid), String(user.gid), spec.cmd, ...args]]
      : [spec.cmd, args];
    try {
      // The child gets its own process group, so a timeout or kill reaches the whole tree.
      child = spawner.spawn({ cmd, args: argv, env, cwd: this.info.cwd });
    } catch (err) {
      this.failToStart(err as NodeJS.ErrnoException);
      return Promise.resolve();
    }
    this.child = child;
    let timer: NodeJS.Timeout | undefined;
    const started = new Promise<void>((resolve) => {
      child.once('error', (err) => {
        this.failToStart(err);
        resolve();
      });
      child.once('spawn', () => {
        this.info.pid = child.pid ?? 0;
        this.emit({ type: 'start', pid: this.info.pid });
        if (spec.timeout_ms !== undefined) {
          timer = setTimeout(() => {
            this.info.timed_out = true;
            this.killGroup('SIGKILL');
          }, spec.timeout_ms);
        }
        resolve();
      });
    });

    const pipe = (source: NodeJS.ReadableStream, type: 'stdout' | 'stderr') => {
      const decoder = new StringDecoder('utf8');
      source.on('data', (chunk: Buffer) => {
        const data = decoder.write(chunk);
        if (data) this.emit({ type, data });
      });
      source.on('end', () => {
        const rest = decoder.end();
        if (rest) this.emit({ type, data: rest });
      });
    };
    pipe(child.stdout, 'stdout');
    pipe(child.stderr, 'stderr');

    // Written (or closed) right away: the spawner delivers it once the process runs.
    if (spec.stdin !== undefined) {
      child.writeStdin(spec.stdin);
      child.closeStdin();
    } else if (!this.background) {
      child.closeStdin();
    }

    child.once('exit', (code, signal) => {
      if (timer) clearTimeout(timer);
      const finish = () => this.finish(code, signal);
      // Wait for the pipes to drain, but not forever: a background grandchild may hold them.
      const drainTimer = setTimeout(() => {
        child.release();
        finish();
      }, DRAIN_GRACE_MS);
      child.once('close', () => {
        clearTimeout(drainTimer);
        finish();
      });
    });
    return started;
  }

  private failToStart(err: NodeJS.ErrnoException): void {
    const notFound = err.code === 'ENOENT';
    const reason = notFound ? 'command not found' : `cannot execute (${err.code ?? err.message})`;
    this.emit({ type: 'stderr', data: `warren: ${this.info.cmd}: ${reason}\n` });
    this.finishWith(notFound ? 127 : 126, null);
  }

  private finished = false;
  private finish(code: number | null, signal: NodeJS.Signals | null): void {
    const exitCode = code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
    this.finishWith(exitCode, signal);
  }

  private finishWith(exitCode: number, signal: string | null): void {
    if (this.finished) return;
    this.finished = true;
    this.info.state = 'exited';
    this.info.exit_code = exitCode;
    this.info.signal = signal;
    this.info.ended_at = new Date().toISOString();
    this.emit({
      type: 'exit',
      exit_code: exitCode,
      signal,
      timed_out: this.info.timed_out,
      duration_ms: Date.now() - this.startedAt,
    });
    this.listeners.clear();
    this.markExited();
  }

  writeStdin(data: string, eof: boolean): void {
    const child = this.child;
    if (!this.running || !child || !child.stdinWritable) {
      throw new WarrenError(
        'PROCESS_NOT_RUNNING',
        `process ${this.info.pid} does not accept input`,
      );
    }
    if (data) child.writeStdin(data);
    if (eof) child.closeStdin();
  }

  killGroup(signal: NodeJS.Signals): void {
    if (!this.running || !this.info.pid) {
      throw new WarrenError('PROCESS_NOT_RUNNING', `process ${this.info.pid} has exited`);
    }
    this.child?.kill(signal); // the whole process group
  }
}

export class ProcessTable {
  private readonly byPid = new Map<number, GuestProcess>();

  /** One Spawner (one helper process) is shared by every process of the table. */
  constructor(
    private readonly baseEnv: () => NodeJS.ProcessEnv,
    private readonly spawner: Spawner = new Spawner(),
  ) {}

  async start(spec: GuestProcessStart): Promise<GuestProcess> {
    const user = spec.user !== undefined ? await resolveUser(spec.user) : undefined;
    const asOther = user !== undefined && (user.uid !== 0 || user.gid !== 0);
    let cwd = spec.cwd ?? '/root';
    if (spec.cwd === undefined && asOther) {
      const home = await stat(user.home).catch(() => null);
      cwd = home?.isDirectory() ? user.home : '/';
    }
    const st = await stat(cwd).catch(() => null);
    if (!st?.isDirectory()) {
      throw new WarrenError('CWD_NOT_FOUND', `working directory ${cwd} does not exist`);
    }
    const proc = new GuestProcess(spec, cwd);
    const userEnv = user ? { HOME: user.home, USER: user.name, LOGNAME: user.name } : {};
    const env = { ...this.baseEnv(), ...userEnv, ...spec.env };
    await proc.start(spec, env, this.spawner, asOther ? user : undefined);
    if (proc.info.pid) this.byPid.set(proc.info.pid, proc);
    void proc.exited.then(() => {
      if (!proc.background) this.byPid.delete(proc.info.pid);
      this.prune();
    });
    return proc;
  }

  get(pid: number): GuestProcess {
    const p = this.byPid.get(pid);
    if (!p) throw new WarrenError('PROCESS_NOT_FOUND', `no process ${pid}`);
    return p;
  }

  list(): ProcessInfo[] {
    return [...this.byPid.values()].filter((p) => p.background).map((p) => p.info);
  }

  remove(pid: number): void {
    const p = this.get(pid);
    if (p.running) p.killGroup('SIGKILL');
    this.byPid.delete(pid);
  }

  /** The shared spawner (identity changes go through it). */
  get helper(): Spawner {
    return this.spawner;
  }

  /**
   * Kills every process of the sandbox except the agent, its helper and
   * `alsoKeep` (the relay), and forgets them: the start of a sandbox that gets
   * a parent's files but none of its processes.
   */
  async reset(alsoKeep: Array<number | undefined> = []): Promise<number> {
    const keep = new Set([process.pid, this.spawner.helperPid, ...alsoKeep]);
    let killed = 0;
    if (process.pid !== 1) {
      // Not a sandbox's first process (the fake driver runs agents on the host):
      // only what this agent started may be touched.
      for (const p of this.byPid.values()) if (p.running) p.killGroup('SIGKILL');
      killed = this.byPid.size;
      this.byPid.clear();
      return killed;
    }
    for (const name of await readdir('/proc')) {
      const pid = Number(name);
      if (!Number.isInteger(pid) || keep.has(pid)) continue;
      try {
        process.kill(pid, 'SIGKILL');
        killed += 1;
      } catch {
        // gone already
      }
    }
    this.byPid.clear();
    return killed;
  }

  private prune(): void {
    const exited = [...this.byPid.values()].filter((p) => !p.running);
    for (const p of exited.slice(0, Math.max(0, exited.length - MAX_EXITED_KEPT)))
      this.byPid.delete(p.info.pid);
  }
}
