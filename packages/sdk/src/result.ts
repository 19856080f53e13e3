/**
 * What a finished command looks like to SDK users, and how a stream of exec
 * events folds into it. Shared by foreground streaming runs and background
 * handles, so both report results (and call handlers) the same way.
 */
import type { ExecEvent, ExecResult } from '@warren/protocol';
import { errorFromEvent } from './errors';

export interface CommandResult {
  pid: number;
  /** 127 when the program was not found; 128+N when killed by signal N. */
  exitCode: number;
  stdout: string;
  stderr: string;
  /** Name of the signal that killed the process, if one did. */
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
}

export interface OutputHandlers {
  /** Called per chunk of stdout, in arrival order. A returned promise is awaited (backpressure). */
  onStdout?: (data: string) => unknown;
  onStderr?: (data: string) => unknown;
}

export function fromExecResult(r: ExecResult): CommandResult {
  return {
    pid: r.pid,
    exitCode: r.exit_code,
    stdout: r.stdout,
    stderr: r.stderr,
    signal: r.signal,
    timedOut: r.timed_out,
    durationMs: r.duration_ms,
  };
}

type ExitEvent = Extract<ExecEvent, { type: 'exit' }>;

/** What a stream delivered: all output, and the exit event unless the stream ended first. */
export interface Collected {
  pid: number;
  stdout: string;
  stderr: string;
  exit: Pick<ExitEvent, 'exit_code' | 'signal' | 'timed_out' | 'duration_ms'> | null;
}

export function toCommandResult(
  c: Collected & { exit: NonNullable<Collected['exit']> },
): CommandResult {
  return {
    pid: c.pid,
    exitCode: c.exit.exit_code,
    stdout: c.stdout,
    stderr: c.stderr,
    signal: c.exit.signal,
    timedOut: c.exit.timed_out,
    durationMs: c.exit.duration_ms,
  };
}

/**
 * Consumes events until `exit`, accumulating output and calling the handlers
 * in arrival order. An `error` event throws its WarrenError; a stream that
 * just ends yields `exit: null` so each caller decides what that means.
 */
export async function collectEvents(
  events: AsyncIterable<ExecEvent>,
  handlers: OutputHandlers,
  pid = 0,
): Promise<Collected> {
  const c: Collected = { pid, stdout: '', stderr: '', exit: null };
  for await (const event of events) {
    switch (event.type) {
      case 'start':
        c.pid = event.pid;
        break;
      case 'stdout':
        c.stdout += event.data;
        await handlers.onStdout?.(event.data);
        break;
      case 'stderr':
        c.stderr += event.data;
        await handlers.onStderr?.(event.data);
        break;
      case 'exit':
        // Leaving the loop closes the stream; nothing follows an exit anyway.
        c.exit = event;
        return c;
      case 'error':
        throw errorFromEvent(event.code, event.message);
    }
  }
  return c;
}
