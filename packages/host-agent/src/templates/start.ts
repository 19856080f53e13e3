/**
 * Running programs in a sandbox from the host agent during template builds:
 * recipe steps, and the template's start command and readiness check before
 * the snapshot is taken (so every restored copy starts with them running).
 */
import { createInterface } from 'node:readline';
import {
  GUEST_PATHS,
  WarrenError,
  type ExecEvent,
  type GuestProcessStart,
  type ProcessInfo,
  type ReadyProbe,
} from '@warren/protocol';
import type { GuestChannel } from '../guest/channel';
import { errorFrom, readText } from '../guest/wire';
import type { Progress } from './rootfs';

export interface BakeOptions {
  env?: Record<string, string>;
  cwd?: string | null;
  /** The template's default user (an image's `User`); its processes, start command included, run as it. */
  user?: string | null;
  start?: string[] | null;
  ready?: ReadyProbe | null;
  progress?: Progress;
}

/** The bake options of a template's metadata (or record): its defaults, start and readiness check. */
export function bakeOptionsOf(
  t: {
    env?: Record<string, string>;
    workdir?: string | null;
    user?: string | null;
    start?: string[] | null;
    ready?: ReadyProbe | null;
  },
  progress?: Progress,
): BakeOptions {
  return { env: t.env, cwd: t.workdir, user: t.user, start: t.start, ready: t.ready, progress };
}

export interface GuestRunResult {
  exitCode: number;
  timedOut: boolean;
  /** The last few KiB of stdout and stderr together. */
  tail: string;
}

const TAIL = 4096;

/** Runs a program to its end; output lines go to `onLine` as they come. */
export async function runInGuest(
  channel: GuestChannel,
  spec: Omit<GuestProcessStart, 'background'>,
  onLine?: (line: string) => void,
): Promise<GuestRunResult> {
  const res = await channel.request({
    method: 'POST',
    path: GUEST_PATHS.processes,
    json: { ...spec, background: false },
  });
  if (res.status >= 400) throw errorFrom(res.status, await readText(res.body));
  let tail = '';
  const partial = { stdout: '', stderr: '' };
  const emit = (stream: 'stdout' | 'stderr', data: string, flush = false) => {
    tail = (tail + data).slice(-TAIL);
    const text = partial[stream] + data;
    const lines = text.split('\n');
    partial[stream] = flush ? '' : (lines.pop() ?? '');
    for (const line of lines) if (line || !flush) onLine?.(line);
  };
  for await (const raw of createInterface({ input: res.body, crlfDelay: Infinity })) {
    if (!raw.trim()) continue;
    const event = JSON.parse(raw) as ExecEvent;
    if (event.type === 'stdout' || event.type === 'stderr') emit(event.type, event.data);
    else if (event.type === 'error') throw new WarrenError('GUEST_UNAVAILABLE', event.message);
    else if (event.type === 'exit') {
      emit('stdout', '', true);
      emit('stderr', '', true);
      return { exitCode: event.exit_code, timedOut: event.timed_out, tail };
    }
  }
  throw new WarrenError('GUEST_UNAVAILABLE', 'the sandbox agent stream ended before the exit');
}

/**
 * Starts the template's start command in the background and polls its
 * readiness check until it exits 0. A start command that exits non-zero
 * before it is ready, or a check that never passes, fails the build.
 */
export async function startAndWaitReady(channel: GuestChannel, opts: BakeOptions): Promise<void> {
  const [cmd, ...args] = opts.start ?? [];
  if (!cmd) return;
  opts.progress?.(`start command: ${JSON.stringify(opts.start)}`);
  const started = await channel.json<ProcessInfo>({
    method: 'POST',
    path: GUEST_PATHS.processes,
    json: { cmd, args, background: true } satisfies GuestProcessStart,
  });
  const [probeCmd, ...probeArgs] = opts.ready?.cmd ?? [];
  const deadline = Date.now() + (opts.ready?.timeout ?? 30) * 1000;
  const exitedBadly = async (): Promise<string | null> => {
    const info = await channel.json<ProcessInfo>({
      method: 'GET',
      path: `${GUEST_PATHS.processes}/${started.pid}`,
    });
    if (info.state === 'exited' && (info.exit_code !== 0 || info.signal))
      return `start command exited (code ${info.exit_code}, signal ${info.signal ?? 'none'}) before the template was ready`;
    return null;
  };
  if (!probeCmd) {
    // No readiness check: give the command a moment to fail fast, then snapshot.
    await new Promise((r) => setTimeout(r, 200));
    const failed = await exitedBadly();
    if (failed) throw new WarrenError('TEMPLATE_BUILD_FAILED', failed);
    return;
  }
  let last: GuestRunResult | null = null;
  for (let attempt = 1; ; attempt++) {
    const failed = await exitedBadly();
    if (failed) throw new WarrenError('TEMPLATE_BUILD_FAILED', failed);
    last = await runInGuest(channel, { cmd: probeCmd, args: probeArgs, timeout_ms: 10_000 }).catch(
      (err: unknown) => {
        if (err instanceof WarrenError && err.code !== 'GUEST_UNAVAILABLE') throw err;
        return null;
      },
    );
    if (last?.exitCode === 0) {
      opts.progress?.(`ready after ${attempt} check${attempt > 1 ? 's' : ''}`);
      return;
    }
    if (Date.now() > deadline)
      throw new WarrenError(
        'TEMPLATE_BUILD_FAILED',
        `readiness check ${JSON.stringify(opts.ready?.cmd)} did not pass within ${opts.ready?.timeout ?? 30} s (last exit code ${last?.exitCode ?? 'none'})`,
        { output: last?.tail ?? '' },
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}
