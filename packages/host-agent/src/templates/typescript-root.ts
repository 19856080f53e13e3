/**
 * The root of the `typescript` template, after debootstrap (Debian 12 with
 * `nodejs`): Debian 12 has no typescript-language-server package, and a
 * recipe build has no network, so the host installs it from the npm registry
 * into the new root, with the TypeScript it drives:
 *
 *   /usr/local/lib/typescript-language-server/node_modules/   the packages
 *   /usr/local/bin/typescript-language-server               a link to its CLI
 *
 * The packages are JavaScript only (install scripts are not run), so the
 * host's npm fills the root and the sandbox's own Node.js runs them.
 */
import { spawn } from 'node:child_process';
import { mkdir, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import type { Progress } from './rootfs';

/** Pinned: 4.4 is the last line that runs on Debian 12's Node.js 18 (5.x needs 20, 6.x 22). */
export const TYPESCRIPT_PACKAGES = ['typescript-language-server@4.4.1', 'typescript@5.9.3'];
const PREFIX = 'usr/local/lib/typescript-language-server';

function npm(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    child.once('error', (err) =>
      reject(new WarrenError('RUNTIME_ERROR', `cannot run npm on the host: ${err.message}`)),
    );
    child.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(new WarrenError('RUNTIME_ERROR', `npm install failed (exit ${code}): ${out}`)),
    );
  });
}

export async function finishTypescriptRoot(rootfs: string, progress: Progress): Promise<void> {
  progress(`installing ${TYPESCRIPT_PACKAGES.join(', ')} from npm`);
  const prefix = join(rootfs, PREFIX);
  await mkdir(prefix, { recursive: true });
  await npm([
    'install',
    '--prefix',
    prefix,
    '--ignore-scripts',
    '--no-audit',
    '--no-fund',
    '--no-package-lock',
    '--omit=dev',
    ...TYPESCRIPT_PACKAGES,
  ]);
  await rm(join(prefix, 'package.json'), { force: true });
  await mkdir(join(rootfs, 'usr/local/bin'), { recursive: true });
  await symlink(
    '../lib/typescript-language-server/node_modules/typescript-language-server/lib/cli.mjs',
    join(rootfs, 'usr/local/bin/typescript-language-server'),
  );
}
