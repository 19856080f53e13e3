/**
 * Roots of official templates made from another template's root: a copy of
 * that root (`cp --reflink=auto`), then `apt-get install` in a chroot. This is
 * much faster than debootstrap with many packages (which fetches and unpacks
 * one package at a time with its own resolver): apt downloads in one
 * pipelined batch and dpkg unpacks in bulk. Downloaded .deb files are kept in
 * `<templates>/.apt-cache/<suite>` and handed to the next build, so a rebuild
 * downloads nothing that it already has.
 */
import { spawn } from 'node:child_process';
import { copyFile, link, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import type { Progress } from './rootfs';

function run(cmd: string, args: string[], progress?: Progress): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
        LANG: 'C.UTF-8',
        DEBIAN_FRONTEND: 'noninteractive',
        HOME: '/root',
      },
    });
    let tail = '';
    const onData = (d: Buffer) => {
      for (const line of d.toString().split('\n')) {
        if (!line.trim()) continue;
        tail = (tail + '\n' + line).slice(-2000);
        if (progress && /^(Get|Unpacking|Setting up|Fetched|E:)/.test(line)) progress(line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) =>
      reject(new WarrenError('RUNTIME_ERROR', `cannot run ${cmd}: ${err.message}`)),
    );
    child.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(new WarrenError('RUNTIME_ERROR', `${cmd} failed (exit ${code}):${tail}`)),
    );
  });
}

/** Hard links (or copies, across file systems) the .deb files of `from` that `to` lacks. */
async function shareDebs(from: string, to: string): Promise<number> {
  if (!existsSync(from)) return 0;
  await mkdir(to, { recursive: true });
  let n = 0;
  for (const name of await readdir(from)) {
    if (!name.endsWith('.deb') || existsSync(join(to, name))) continue;
    await link(join(from, name), join(to, name)).catch(() =>
      copyFile(join(from, name), join(to, name)),
    );
    n++;
  }
  return n;
}

const NODOC = [
  'path-exclude /usr/share/doc/*',
  'path-include /usr/share/doc/*/copyright',
  'path-exclude /usr/share/man/*',
  'path-exclude /usr/share/info/*',
  '',
].join('\n');

export interface DerivedRootOptions {
  /** The root to start from (left as it is). */
  baseRoot: string;
  packages: string[];
  /** Where downloaded packages are kept between builds. */
  aptCache: string;
}

/** Builds `target` from a copy of `baseRoot` with `packages` installed (see the file comment). */
export async function deriveRoot(
  target: string,
  opts: DerivedRootOptions,
  progress: Progress,
): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await mkdir(dirname(target), { recursive: true });
  progress(`copying the base root`);
  await run('cp', ['-a', '--reflink=auto', opts.baseRoot, target]);
  const archives = join(target, 'var/cache/apt/archives');
  const reused = await shareDebs(opts.aptCache, archives);
  if (reused) progress(`${reused} packages from the package cache`);
  const resolv = join(target, 'etc/resolv.conf');
  const ownResolv = existsSync(resolv) ? await readFile(resolv) : null;
  await writeFile(resolv, await readFile('/etc/resolv.conf'));
  // No documentation or manual pages in the root (copyrights stay): less to unpack and store.
  await writeFile(join(target, 'etc/dpkg/dpkg.cfg.d/warren-nodoc'), NODOC);
  const apt = (args: string[]) =>
    run(
      'chroot',
      [
        target,
        'apt-get',
        '-q',
        '-o',
        'Acquire::Retries=3',
        // The root is a throwaway copy until it is renamed into place: dpkg need not fsync.
        '-o',
        'Dpkg::Options::=--force-unsafe-io',
        ...args,
      ],
      progress,
    );
  try {
    await apt(['update']);
    await apt(['install', '-y', '--no-install-recommends', ...opts.packages]);
    const kept = await shareDebs(archives, opts.aptCache);
    if (kept) progress(`${kept} packages added to the package cache`);
  } finally {
    if (ownResolv) await writeFile(resolv, ownResolv);
    else await rm(resolv, { force: true });
  }
  await rm(archives, { recursive: true, force: true });
  await mkdir(join(archives, 'partial'), { recursive: true });
}
