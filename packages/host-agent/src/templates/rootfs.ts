/** Root filesystems built with debootstrap from Debian's mirror. */
import { spawn } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { GUEST_AGENT_DIR, GUEST_CHANNEL_DIR } from '@warren/protocol/guest';
import { WarrenError } from '@warren/protocol';

export type Progress = (line: string) => void;

export interface DebootstrapOptions {
  suite: string;
  packages: string[];
  mirror: string;
}

/** Builds a minimal Debian root into `target` (atomically: a half-built tree never has that name). */
export async function debootstrap(
  target: string,
  opts: DebootstrapOptions,
  progress: Progress,
): Promise<void> {
  const tmp = `${target}.tmp`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  const args = [
    '--variant=minbase',
    `--include=${opts.packages.join(',')}`,
    opts.suite,
    tmp,
    opts.mirror,
  ];
  await new Promise<void>((resolve, reject) => {
    const child = spawn('debootstrap', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let lastLines = '';
    const onData = (d: Buffer) => {
      for (const line of d.toString().split('\n')) {
        if (!line.trim()) continue;
        lastLines = (lastLines + '\n' + line).slice(-2000);
        if (line.startsWith('I: ')) progress(line.slice(3));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) =>
      reject(new WarrenError('RUNTIME_ERROR', `cannot run debootstrap: ${err.message}`)),
    );
    child.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new WarrenError('RUNTIME_ERROR', `debootstrap failed (exit ${code}):${lastLines}`),
          ),
    );
  });
  // Mount points of the guest agent and its channel; the root is mounted read-only.
  await mkdir(join(tmp, GUEST_AGENT_DIR), { recursive: true });
  await mkdir(join(tmp, GUEST_CHANNEL_DIR), { recursive: true });
  await rm(join(tmp, 'var/cache/apt/archives'), { recursive: true, force: true });
  await mkdir(join(tmp, 'var/cache/apt/archives/partial'), { recursive: true });
  await rm(target, { recursive: true, force: true });
  await rename(tmp, target);
}
