/**
 * Captures what a recipe's steps changed in a build sandbox, as a diff
 * against the base template's root, instead of archiving the whole root:
 *
 * 1. After the steps, a marker file dated to their start (or to the start
 *    of a base's own, see markBuildStart) is written into the sandbox's /tmp.
 * 2. One `find / -xdev` pass lists every path of the sandbox's root file
 *    system, and every path changed (`-newer` or `-cnewer`) since the
 *    marker, into two files.
 * 3. Changed = changed since the marker, plus paths the base does not have
 *    (a rename keeps its times). Deleted = paths of the base the sandbox no
 *    longer has. A path whose ctime alone is newer (its mtime is not) counts
 *    only if its mode, owner, size or mtime differ from the base's: a hard
 *    link to a base file, made on the host by another build's copy of the
 *    same root, changes nothing but its ctime (see sameAsBase).
 * 4. The sandbox archives only the changed paths (`tar --no-recursion`) and
 *    the archive is streamed out over the agent channel.
 * 5. The new root starts as a hard-link copy of the base's root (`cp -al`,
 *    made on the host while the steps run, see copyRoot);
 *    deleted paths are unlinked from the copy, and the archive is applied by
 *    the safe extractor, which always unlinks before it writes, so a file
 *    shared with the base is never written in place.
 *
 * /tmp is a separate in-memory file system in the sandbox, so `-xdev` leaves
 * it (and the marker, lists and archive there) out, like /proc, /dev and the
 * agent's mounts.
 */
import { execFile } from 'node:child_process';
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { WarrenError } from '@warren/protocol';
import type { GuestChannel } from '../guest/channel';
import { applyLayer, resolveInRoot } from './layer-extract';
import { runInGuest } from './start';

const MARKER = '/tmp/.warren-build-start';
const ALL = '/tmp/.warren-all';
const CHANGED = '/tmp/.warren-changed';
const CTIME_ONLY = '/tmp/.warren-ctime-only';
const LIST = '/tmp/.warren-list';
const ARCHIVE = '/tmp/.warren-diff.tar';

/**
 * Marks when the changes to capture began (ms since the epoch, host time,
 * which is the sandbox's): the start of the steps, or of those of the first
 * base built by bakeBuildSandbox, whose changes are in its image and not in
 * its root. In whole seconds, rounded down and one more second back, so a
 * few paths written as the build sandbox started may count as changed too.
 */
export async function markBuildStart(channel: GuestChannel, since: number): Promise<void> {
  await sh(channel, `touch -d @${Math.floor(since / 1000) - 1} ${MARKER}`, 'touch');
}

async function download(channel: GuestChannel, path: string): Promise<Buffer> {
  const { stream } = await channel.download(path);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function sh(channel: GuestChannel, line: string, what: string): Promise<void> {
  const res = await runInGuest(channel, {
    cmd: '/bin/sh',
    args: ['-c', line],
    timeout_ms: 600_000,
  });
  // GNU tar exits 1 when a file changed while it was read; the archive is still whole.
  if (res.exitCode !== 0 && !(what === 'tar' && res.exitCode === 1))
    throw new WarrenError(
      'TEMPLATE_BUILD_FAILED',
      `capturing the root file system failed (${what} exit ${res.exitCode}; the base needs /bin/sh, find and tar)`,
      { output: res.tail },
    );
}

/** Relative paths (no leading /) of every entry under `root`. */
function listTree(root: string): Set<string> {
  const out = new Set<string>();
  const walk = (rel: string) => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      out.add(p);
      if (e.isDirectory()) walk(p);
    }
  };
  walk('');
  return out;
}

/**
 * `target` as a hard-link copy of `base` (a full copy across file systems),
 * where captureRecipeRoot applies the changes. A hard link changes the ctime
 * of the base's files, which `find -cnewer` sees: sameAsBase tells them apart.
 */
export async function copyRoot(base: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  try {
    await promisify(execFile)('cp', ['-al', base, target]);
  } catch {
    // Another file system: a full copy instead of hard links.
    await rm(target, { recursive: true, force: true });
    await promisify(execFile)('cp', ['-a', base, target]);
  }
}

/**
 * Whether a path of the sandbox whose ctime alone changed is as in the base:
 * same permission bits, owner, group, size and mtime to the nanosecond (the
 * quick check rsync makes). `meta` is find's `%m %U %G %s %T@`.
 */
function sameAsBase(baseRootfs: string, path: string, meta: string): boolean {
  const [mode, uid, gid, size, mtime = ''] = meta.split(' ');
  const [sec = '', frac = ''] = mtime.split('.');
  if (!/^\d+$/.test(sec) || !/^\d*$/.test(frac)) return false;
  try {
    const st = lstatSync(resolveInRoot(baseRootfs, path.split('/'), false), { bigint: true });
    return (
      (st.mode & 0o7777n).toString(8) === mode &&
      String(st.uid) === uid &&
      String(st.gid) === gid &&
      String(st.size) === size &&
      st.mtimeNs === BigInt(sec) * 1_000_000_000n + BigInt(frac.padEnd(9, '0').slice(0, 9))
    );
  } catch {
    return false; // not in the base (or not reachable in it): changed
  }
}

const paths = (buf: Buffer): string[] =>
  buf
    .toString('utf8')
    .split('\0')
    .map((p) => p.replace(/^\/+/, ''))
    .filter(Boolean);

/** Applies the steps' changes to `rootfs`, a copy of the base's root made by copyRoot. */
export async function captureRecipeRoot(
  channel: GuestChannel,
  baseRootfs: string,
  rootfs: string,
  progress: (line: string) => void,
): Promise<void> {
  const deleted = await diffInSandbox(channel, baseRootfs, progress);
  let gone = '';
  for (const p of deleted) {
    if (gone && p.startsWith(`${gone}/`)) continue; // inside a deleted directory
    try {
      rmSync(resolveInRoot(rootfs, p.split('/'), false), { recursive: true, force: true });
    } catch {
      // its parent is gone or was replaced: nothing left to delete
    }
    gone = p;
  }
  const { stream } = await channel.download(ARCHIVE);
  const stats = await applyLayer(rootfs, stream);
  progress(`changes applied: ${stats.entries} entries, ${stats.bytes} bytes`);
}

/** Archives the changed paths in the sandbox (ARCHIVE); returns the base's paths it deleted. */
async function diffInSandbox(
  channel: GuestChannel,
  baseRootfs: string,
  progress: (line: string) => void,
): Promise<string[]> {
  const meta = '%p\\0%m %U %G %s %T@\\0';
  // GNU find writes the three lists in one pass; another find (busybox) takes
  // two and every ctime change counts.
  await sh(
    channel,
    `find / -xdev -fprint0 ${ALL} \\( -newer ${MARKER} -fprint0 ${CHANGED} -o -cnewer ${MARKER} -fprintf ${CTIME_ONLY} '${meta}' \\) 2>/dev/null || ` +
      `{ find / -xdev -print0 > ${ALL} && find / -xdev \\( -newer ${MARKER} -o -cnewer ${MARKER} \\) -print0 > ${CHANGED} && : > ${CTIME_ONLY}; }`,
    'find',
  );
  const all = new Set(paths(await download(channel, ALL)));
  const changed = new Set(paths(await download(channel, CHANGED)));
  const ctimeOnly = (await download(channel, CTIME_ONLY)).toString('utf8').split('\0');
  for (let i = 0; i + 1 < ctimeOnly.length; i += 2) {
    const path = ctimeOnly[i]!.replace(/^\/+/, '');
    if (path && !sameAsBase(baseRootfs, path, ctimeOnly[i + 1]!)) changed.add(path);
  }
  const base = listTree(baseRootfs);
  for (const p of all) if (!base.has(p)) changed.add(p);
  const deleted = [...base].filter((p) => !all.has(p)).sort();
  progress(`${changed.size} paths changed, ${deleted.length} deleted`);

  await channel.upload(LIST, Readable.from([Buffer.from([...changed].join('\0'))]));
  await sh(
    channel,
    `tar --null --no-recursion --numeric-owner -cpf ${ARCHIVE} -C / -T ${LIST}`,
    'tar',
  );
  return deleted;
}
