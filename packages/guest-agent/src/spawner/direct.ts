/** The fallback: starting a SpawnedChild with child_process.spawn when there is no helper. */
import { spawn as spawnProcess, type ChildProcess } from 'node:child_process';
import type { SpawnedChild } from './child';

/** Starts `child` with child_process.spawn; a synchronous throw is rethrown. */
export function spawnDirect(child: SpawnedChild, replay: boolean): void {
  const { cmd, args, env, cwd } = child.options;
  // Own session and process group, so a timeout or kill reaches the whole tree.
  const cp: ChildProcess = spawnProcess(cmd, [...args], {
    cwd,
    env,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  cp.stdin?.on('error', () => {}); // EPIPE when the program never reads stdin
  child.attach(
    {
      writeStdin: (data) => cp.stdin?.write(data),
      closeStdin: () => cp.stdin?.end(),
      kill: (signal) => {
        try {
          if (cp.pid !== undefined) process.kill(-cp.pid, signal);
        } catch {
          cp.kill(signal);
        }
      },
      release: () => {
        cp.stdout?.destroy();
        cp.stderr?.destroy();
      },
    },
    replay,
  );
  cp.once('spawn', () => child.started(cp.pid ?? 0));
  cp.on('error', (err: NodeJS.ErrnoException) => {
    if (cp.pid === undefined) child.failed(err);
  });
  for (const name of ['stdout', 'stderr'] as const) {
    const s = cp[name];
    s?.on('data', (chunk: Buffer) => child.output(name, chunk));
    s?.once('close', () => child.output(name, null));
  }
  cp.once('exit', (code, signal) => child.exited(code, signal));
}
