/** Running programs in a database sandbox through HostApi, to completion. */
import { WarrenError, type GuestProcessStart, type HostApi } from '@warren/protocol';

export interface Ran {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** Runs a process and collects its output; a start error (no sandbox, no user) throws. */
export async function run(
  host: HostApi,
  sandboxId: string,
  start: GuestProcessStart,
): Promise<Ran> {
  const events = await host.processes.exec(sandboxId, start);
  const out: Ran = { stdout: '', stderr: '', exitCode: -1 };
  for await (const e of events) {
    if (e.type === 'stdout') out.stdout += e.data;
    else if (e.type === 'stderr') out.stderr += e.data;
    else if (e.type === 'exit') out.exitCode = e.timed_out ? 124 : e.exit_code;
    else if (e.type === 'error')
      throw new WarrenError('DATABASE_COMMAND_FAILED', `${start.cmd}: ${e.message}`);
  }
  return out;
}

/** Runs a process; throws DATABASE_COMMAND_FAILED with its stderr unless it exits 0. */
export async function runOk(
  host: HostApi,
  sandboxId: string,
  start: GuestProcessStart,
  what: string,
): Promise<string> {
  const r = await run(host, sandboxId, start);
  if (r.exitCode !== 0) {
    const detail = (r.stderr.trim() || r.stdout.trim()).slice(-4000);
    throw new WarrenError(
      'DATABASE_COMMAND_FAILED',
      `${what} failed (exit ${r.exitCode})${detail ? `: ${detail}` : ''}`,
      { exit_code: r.exitCode, stderr: r.stderr.slice(-4000) },
    );
  }
  return r.stdout;
}

/** `sh -c <script> sh <args...>`: arguments stay arguments, never shell text. */
export function sh(
  script: string,
  args: string[],
  o: { user: string; stdin?: string; timeoutMs?: number; bash?: boolean },
): GuestProcessStart {
  return {
    cmd: o.bash ? '/bin/bash' : '/bin/sh',
    args: ['-c', script, 'sh', ...args],
    user: o.user,
    cwd: '/',
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' },
    ...(o.stdin !== undefined && { stdin: o.stdin }),
    ...(o.timeoutMs !== undefined && { timeout_ms: o.timeoutMs }),
  };
}
