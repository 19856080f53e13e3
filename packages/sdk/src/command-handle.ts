/**
 * A handle on a background command (from `commands.run(.., {background: true})`
 * or `commands.connect(pid)`): wait for it, feed its stdin, signal it, or
 * stream its output again. Output is buffered by the server, so attaching late
 * still replays everything from the start.
 */
import type { ProcessInfo } from '@warren/protocol';
import { WarrenConnectionError } from './errors';
import type { Processes, Signal } from './processes';
import { collectEvents, toCommandResult, type CommandResult, type OutputHandlers } from './result';

export class CommandHandle {
  readonly pid: number;
  readonly #processes: Processes;
  readonly #handlers: OutputHandlers;
  #waiting: Promise<CommandResult> | undefined;

  constructor(processes: Processes, pid: number, handlers: OutputHandlers = {}) {
    this.pid = pid;
    this.#processes = processes;
    this.#handlers = handlers;
    // With handlers given up front, output flows to them right away, not only once wait() is called.
    if (handlers.onStdout || handlers.onStderr) void this.#follow();
  }

  /** Resolves when the process exits; the handlers given at start see all of its output. */
  wait(): Promise<CommandResult> {
    return this.#follow();
  }

  /**
   * Streams the output to `handlers` (buffered output first, then live) and
   * resolves with the result at exit. Each call opens its own stream.
   */
  async output(
    handlers: OutputHandlers = {},
    opts: { signal?: AbortSignal } = {},
  ): Promise<CommandResult> {
    const events = this.#processes.output(this.pid, { follow: true, signal: opts.signal });
    const c = await collectEvents(events, handlers, this.pid);
    if (c.exit) return toCommandResult({ ...c, exit: c.exit });
    // The stream ended without an exit event; trust the process table over a guess.
    const info = await this.info();
    if (info.state !== 'exited' || info.exit_code === null) {
      throw new WarrenConnectionError(
        `output stream of process ${this.pid} ended before it exited`,
      );
    }
    const durationMs = info.ended_at ? Date.parse(info.ended_at) - Date.parse(info.started_at) : 0;
    return toCommandResult({
      ...c,
      exit: {
        exit_code: info.exit_code,
        signal: info.signal,
        timed_out: info.timed_out,
        duration_ms: durationMs,
      },
    });
  }

  info(): Promise<ProcessInfo> {
    return this.#processes.get(this.pid);
  }

  sendStdin(data: string): Promise<void> {
    return this.#processes.sendStdin(this.pid, data);
  }

  closeStdin(): Promise<void> {
    return this.#processes.sendStdin(this.pid, '', { eof: true });
  }

  /** Sends `signal` (SIGTERM by default, like kill(1)). */
  kill(signal: Signal = 'SIGTERM'): Promise<void> {
    return this.#processes.signal(this.pid, signal);
  }

  #follow(): Promise<CommandResult> {
    if (!this.#waiting) {
      this.#waiting = this.output(this.#handlers);
      // Nobody may ever call wait(); that must not become an unhandled rejection.
      this.#waiting.catch(() => {});
    }
    return this.#waiting;
  }
}
