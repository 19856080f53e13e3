import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { WarrenError } from '@warren/protocol';

export interface RunscOptions {
  binary: string;
  /** runsc's state directory (--root). */
  stateDir: string;
}

/**
 * Runs one runsc command. Failures are classified here, at the driver
 * boundary, as RUNTIME_ERROR with the tail of runsc's own message.
 * `logFile` receives the container's stdio for commands that start one: an
 * inherited pipe would keep us waiting for a detached sandbox.
 */
export async function runsc(
  opts: RunscOptions,
  args: string[],
  logFile?: string,
  /**
   * Where the root overlay keeps written files: `memory`, or `dir=<path>` (a
   * file in that host directory, see driver.ts). A checkpoint must be told the
   * sandbox has a file-backed overlay, or it saves the files empty; any
   * directory will do for that, and it works for memory-backed sandboxes too.
   */
  overlay = `dir=${opts.stateDir}`,
  /** Kills runsc and fails with RUNTIME_ERROR past this many milliseconds. */
  timeoutMs?: number,
): Promise<string> {
  const global = [
    '--root',
    opts.stateDir,
    '--network=none',
    '--host-uds=open',
    `--overlay2=root:${overlay}`,
    // Sandboxes run without a network device; their file system cache is private.
    '--file-access=exclusive',
  ];
  const out = logFile ? openSync(logFile, 'a') : null;
  try {
    return await new Promise<string>((resolve, reject) => {
      const child = spawn(opts.binary, [...global, ...args], {
        stdio: ['ignore', out ?? 'pipe', out ?? 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      let timedOut = false;
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              timedOut = true;
              child.kill('SIGKILL');
            }, timeoutMs);
      child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      child.once('error', (err) =>
        reject(new WarrenError('RUNTIME_ERROR', `cannot run runsc: ${err.message}`)),
      );
      child.once('close', (code) => {
        clearTimeout(timer);
        if (timedOut)
          return reject(
            new WarrenError(
              'RUNTIME_ERROR',
              `runsc ${args[0]} did not finish in ${Math.round((timeoutMs ?? 0) / 1000)} s`,
            ),
          );
        if (code === 0) return resolve(stdout);
        const text = logFile ? tail(logFile) : stderr || stdout;
        const detail = text
          .trim()
          .split('\n')
          .filter((l) => !/^\s/.test(l))
          .slice(-3)
          .join(' | ');
        reject(
          new WarrenError(
            'RUNTIME_ERROR',
            `runsc ${args[0]} failed (exit ${code}): ${detail || 'see sandbox log'}`,
          ),
        );
      });
    });
  } finally {
    if (out !== null) closeSync(out);
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-4000);
  } catch {
    return '';
  }
}
