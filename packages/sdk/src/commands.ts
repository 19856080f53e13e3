/**
 * `sandbox.commands`: run a command and get its result, stream its output to
 * callbacks, or start it in the background and get a handle.
 */
import type { ExecEvent, ExecRequest, ExecResult, ProcessInfo } from '@warren/protocol';
import type { HttpClient } from './client';
import { CommandHandle } from './command-handle';
import { WarrenConnectionError } from './errors';
import { parseNdjson } from './ndjson';
import type { Processes, Signal } from './processes';
import {
  collectEvents,
  fromExecResult,
  toCommandResult,
  type CommandResult,
  type OutputHandlers,
} from './result';

export interface RunOptions extends OutputHandlers {
  /** When given, `cmd` is the program and these its arguments; otherwise `cmd` is a shell line. */
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Written to stdin, which is then closed. */
  stdin?: string;
  /** Seconds; the process group is killed after it. */
  timeout?: number;
  /** Start and return a CommandHandle at once instead of waiting for the exit. */
  background?: boolean;
  /** Run as this user of the sandbox: "root", a name, "uid", "uid:gid" or "name:group". */
  user?: string;
  /** Aborts the HTTP request (the process itself is not signalled). */
  signal?: AbortSignal;
}

/** The request the API gets for `run(cmd, opts)`. */
export function toExecRequest(cmd: string, opts: RunOptions = {}): ExecRequest {
  // The API never involves a shell; a bare command line runs through one, so
  // run('ls -la | wc -l') does what a user expects.
  const program = opts.args ? { cmd, args: opts.args } : { cmd: '/bin/sh', args: ['-c', cmd] };
  const req = {
    ...program,
    env: opts.env,
    cwd: opts.cwd,
    stdin: opts.stdin,
    timeout: opts.timeout,
  };
  return opts.user !== undefined ? { ...req, user: opts.user } : req;
}

export class Commands {
  readonly #http: HttpClient;
  readonly #processes: Processes;
  readonly #base: string;

  constructor(http: HttpClient, sandboxId: string, processes: Processes) {
    this.#http = http;
    this.#processes = processes;
    this.#base = `/v1/sandboxes/${encodeURIComponent(sandboxId)}`;
  }

  run(cmd: string, opts: RunOptions & { background: true }): Promise<CommandHandle>;
  run(cmd: string, opts?: RunOptions & { background?: false }): Promise<CommandResult>;
  run(cmd: string, opts?: RunOptions): Promise<CommandResult | CommandHandle>;
  async run(cmd: string, opts: RunOptions = {}): Promise<CommandResult | CommandHandle> {
    const req = toExecRequest(cmd, opts);
    if (opts.background) {
      const info = await this.#processes.start(req);
      return new CommandHandle(this.#processes, info.pid, opts);
    }
    if (opts.onStdout || opts.onStderr) return this.#runStreaming(req, opts);
    const res = await this.#http.json<ExecResult>('POST', `${this.#base}/exec`, {
      json: req,
      signal: opts.signal,
    });
    return fromExecResult(res);
  }

  /** Processes started in this sandbox, running or exited. */
  list(): Promise<ProcessInfo[]> {
    return this.#processes.list();
  }

  /** Reattaches to a background process; output so far is replayed to the handlers. */
  async connect(pid: number, handlers: OutputHandlers = {}): Promise<CommandHandle> {
    await this.#processes.get(pid); // fail now with PROCESS_NOT_FOUND rather than on wait()
    return new CommandHandle(this.#processes, pid, handlers);
  }

  sendStdin(pid: number, data: string): Promise<void> {
    return this.#processes.sendStdin(pid, data);
  }

  kill(pid: number, signal: Signal = 'SIGTERM'): Promise<void> {
    return this.#processes.signal(pid, signal);
  }

  async #runStreaming(req: ExecRequest, opts: RunOptions): Promise<CommandResult> {
    const res = await this.#http.request('POST', `${this.#base}/exec/stream`, {
      json: req,
      signal: opts.signal,
    });
    if (!res.body) throw new WarrenConnectionError('exec stream response had no body');
    const c = await collectEvents(parseNdjson<ExecEvent>(res.body), opts);
    if (!c.exit) throw new WarrenConnectionError('exec stream ended before the command exited');
    return toCommandResult({ ...c, exit: c.exit });
  }
}
