/** The process-facing side of a spawn: SpawnedChild, the same whichever backend started it. */
import { EventEmitter } from 'node:events';
import { constants } from 'node:os';
import { Readable } from 'node:stream';

const SIGNAL_NUMBERS = new Map<string, number>(Object.entries(constants.signals));

export interface SpawnOptions {
  cmd: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

type Stream = 'stdout' | 'stderr';

/** What a SpawnedChild is backed by: the helper or a child_process ChildProcess. */
export interface Backend {
  writeStdin(data: Buffer): void;
  closeStdin(): void;
  kill(signal: number): void;
  release(): void;
  /** A PTY child's terminal size (absent for pipes). */
  resize?(cols: number, rows: number): void;
}

interface SpawnedChildEvents {
  spawn: [];
  error: [err: NodeJS.ErrnoException];
  exit: [code: number | null, signal: NodeJS.Signals | null];
  /** After `exit` once stdout and stderr have both closed, as with ChildProcess. */
  close: [code: number | null, signal: NodeJS.Signals | null];
}

/**
 * A process started by a Spawner. Its process group is its own (pgid = pid),
 * and `kill` signals the whole group. Events: `spawn`, `error` (failed to
 * start, a Node-style errno error such as code 'ENOENT'), `exit`, `close`.
 * As with ChildProcess, `close` needs both stdout and stderr consumed (or
 * released).
 */
export class SpawnedChild extends EventEmitter<SpawnedChildEvents> {
  pid: number | undefined;
  /** Raw output as Buffers; nothing is decoded here. */
  readonly stdout = new Readable({ read() {} });
  readonly stderr = new Readable({ read() {} });
  private backend: Backend | null = null;
  private stdinEnded = false;
  private exitStatus: [number | null, NodeJS.Signals | null] | null = null;
  private openStreams = 2;
  private readonly ended = { stdout: false, stderr: false };
  private closed = false;
  /** Stdin written before the start was confirmed, to replay if the spawn is retried. */
  private preStart: Array<Buffer | null> | null = [];

  constructor(readonly options: SpawnOptions) {
    super();
    for (const s of [this.stdout, this.stderr]) {
      s.once('close', () => {
        this.openStreams -= 1;
        this.maybeClose();
      });
    }
  }

  /** False once stdin was closed (or the process has exited or failed to start). */
  get stdinWritable(): boolean {
    return !this.stdinEnded && this.exitStatus === null;
  }

  writeStdin(data: Buffer | string): void {
    if (!this.stdinWritable) return;
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    this.preStart?.push(buf);
    this.backend?.writeStdin(buf);
  }

  closeStdin(): void {
    if (!this.stdinWritable) return;
    this.stdinEnded = true;
    this.preStart?.push(null);
    this.backend?.closeStdin();
  }

  /** Sends a signal to the child's whole process group. */
  kill(signal: NodeJS.Signals | number = 'SIGTERM'): void {
    const n = typeof signal === 'number' ? signal : SIGNAL_NUMBERS.get(signal);
    if (n === undefined) {
      throw Object.assign(new TypeError(`Unknown signal: ${String(signal)}`), {
        code: 'ERR_UNKNOWN_SIGNAL',
      });
    }
    this.backend?.kill(n);
  }

  /** A PTY child's new terminal size; its foreground process group gets SIGWINCH. */
  resize(cols: number, rows: number): void {
    this.backend?.resize?.(cols, rows);
  }

  /** Stops waiting for output (a grandchild may hold the pipes): the streams are destroyed. */
  release(): void {
    this.stdout.destroy();
    this.stderr.destroy();
    this.backend?.release();
  }

  // The methods below are called by the backends only.

  /** @internal Attaches a backend and replays stdin given before a retried start. */
  attach(backend: Backend, replay: boolean): void {
    this.backend = backend;
    if (!replay) return;
    for (const op of this.preStart ?? []) {
      if (op) backend.writeStdin(op);
      else backend.closeStdin();
    }
  }

  /** @internal */
  started(pid: number): void {
    this.pid = pid;
    this.preStart = null;
    this.emit('spawn');
  }

  /** @internal */
  failed(err: NodeJS.ErrnoException): void {
    this.preStart = null;
    this.stdinEnded = true;
    this.stdout.destroy();
    this.stderr.destroy();
    this.emit('error', err);
  }

  /** @internal */
  output(stream: Stream, data: Buffer | null): void {
    if (this.ended[stream]) return;
    if (data === null) this.ended[stream] = true;
    if (!this[stream].destroyed) this[stream].push(data);
  }

  /** @internal */
  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitStatus) return;
    this.exitStatus = [code, signal];
    this.emit('exit', code, signal);
    this.maybeClose();
  }

  private maybeClose(): void {
    if (this.closed || !this.exitStatus || this.openStreams > 0) return;
    this.closed = true;
    this.emit('close', ...this.exitStatus);
  }
}
