/**
 * Templates shared through the snapshot store: with an S3 store, a template
 * is built once, on one host, and the other hosts fetch it instead of
 * building it again. The image holds the root file system as one tar file
 * (`rootfs.tar`, owners and modes kept) beside the files of the baked
 * snapshot, and the template's record as its meta. Each host keeps its own
 * unpacked copy; the tar is not kept in either host's cache afterwards.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, link, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { WarrenError } from '@warren/protocol';
import type { HostContext } from '../context';
import type { TemplateRecord } from './catalog';

const run = promisify(execFile);
const ROOTFS_TAR = 'rootfs.tar';
const TAR_FLAGS = ['--numeric-owner', '--xattrs', '--xattrs-include=*'];

/**
 * The root as one tar file. GNU tar's exit 1 here is "file changed as we read
 * it": a recipe build on this template hard-linking its files changes their
 * ctime and nothing else (a built root is never written), so the archive is whole.
 */
async function tarRoot(root: string, out: string): Promise<void> {
  try {
    await run('tar', ['-C', root, ...TAR_FLAGS, '--warning=no-file-changed', '-cf', out, '.']);
  } catch (err) {
    if ((err as { code?: unknown }).code !== 1) throw err;
  }
}

/** What travels with the image: the record without this host's paths. */
type SharedRecord = Omit<TemplateRecord, 'rootfs' | 'snapshot' | 'builder_pid' | 'published'>;

/** The image id of one build of a template (a rebuild gets another). */
export function sharedImageId(rec: TemplateRecord): string {
  const build = createHash('sha256')
    .update(`${rec.id}\n${rec.built_at}\n${rec.guest_key}\n${rec.runtime_version}`)
    .digest('hex')
    .slice(0, 16);
  return `template-${rec.name}-${build}`;
}

function needsSharedStore(ctx: HostContext): void {
  if (ctx.snapshots.kind !== 's3')
    throw new WarrenError(
      'INVALID_STATE',
      'templates are shared between hosts only through an S3 snapshot store (WARREN_SNAPSHOT_STORE=s3)',
    );
}

/** Puts a ready template into the store, unless this build is there already. */
export async function publishTemplate(ctx: HostContext, name: string): Promise<string> {
  needsSharedStore(ctx);
  const rec = await ctx.catalog.get(name);
  const id = sharedImageId(rec);
  if (await ctx.snapshots.has(id)) return id;
  const dir = join(ctx.scratchDir, `publish-${id}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  try {
    await tarRoot(rec.rootfs, join(dir, ROOTFS_TAR));
    for (const f of await readdir(rec.snapshot)) {
      const [from, to] = [join(rec.snapshot, f), join(dir, f)];
      await link(from, to).catch(() => copyFile(from, to)); // another file system: a copy
    }
    const { rootfs, snapshot, builder_pid, published, ...shared } = rec;
    await ctx.snapshots.put<SharedRecord>(id, dir, shared);
    await ctx.snapshots.evict(id);
    return id;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Installs a template from the store: its root unpacked, its snapshot, then its record. */
export async function fetchTemplate(
  ctx: HostContext,
  name: string,
  imageId: string,
  o: { keepRoot?: boolean } = {},
): Promise<TemplateRecord> {
  needsSharedStore(ctx);
  const here = await ctx.catalog.read(name);
  if (here?.state === 'ready') {
    if (o.keepRoot && here.published !== undefined && here.published !== imageId)
      return refreshSnapshot(ctx, here, imageId);
    return here;
  }
  if (here) throw new WarrenError('TEMPLATE_NOT_READY', `template ${name} is ${here.state} here`);
  // Beside the templates, so that its snapshot moves into place by a rename.
  const dir = join(ctx.catalog.root, '.fetch', imageId);
  const target = ctx.catalog.dir(name);
  await rm(dir, { recursive: true, force: true });
  try {
    const meta = await materializeChecked(ctx, name, imageId, dir);
    await rm(target, { recursive: true, force: true });
    await mkdir(join(target, 'rootfs.fetch'), { recursive: true });
    await run('tar', [
      '-C',
      join(target, 'rootfs.fetch'),
      ...TAR_FLAGS,
      '-xpf',
      join(dir, ROOTFS_TAR),
    ]);
    await rm(join(dir, ROOTFS_TAR));
    await rename(join(target, 'rootfs.fetch'), join(target, 'rootfs'));
    await rename(dir, join(target, 'snapshot'));
    await ctx.snapshots.evict(imageId);
    // The record last: until it is written the template is not on this host.
    return await ctx.catalog.install({
      ...meta,
      rootfs: join(target, 'rootfs'),
      snapshot: join(target, 'snapshot'),
      published: imageId,
    });
  } catch (err) {
    await rm(target, { recursive: true, force: true });
    throw err;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Downloads a template's image and checks that this host can run its snapshot. */
async function materializeChecked(
  ctx: HostContext,
  name: string,
  imageId: string,
  dir: string,
): Promise<SharedRecord> {
  const { meta } = await ctx.snapshots.materialize<SharedRecord>(imageId, dir);
  if (meta.name !== name)
    throw new WarrenError('INVALID_REQUEST', `image ${imageId} is template ${meta.name}`);
  const guest = await ctx.guestBundle();
  if (meta.guest_key !== guest.key || meta.runtime_version !== ctx.runtimeVersion)
    throw new WarrenError(
      'TEMPLATE_NOT_READY',
      `template ${name} was baked by another release (${meta.runtime_version}); ` +
        `this host runs ${ctx.runtimeVersion}: build it here with POST /v1/templates/${name}/rebuild`,
    );
  return meta;
}

/**
 * A rebuild that baked the snapshot again on the same root: this host's copy
 * takes the new snapshot and record and keeps its root, which sandboxes
 * running here may be using (as a local rebuild does).
 */
async function refreshSnapshot(
  ctx: HostContext,
  here: TemplateRecord,
  imageId: string,
): Promise<TemplateRecord> {
  const dir = join(ctx.catalog.root, '.fetch', imageId);
  await rm(dir, { recursive: true, force: true });
  try {
    const meta = await materializeChecked(ctx, here.name, imageId, dir);
    await rm(join(dir, ROOTFS_TAR));
    await rm(here.snapshot, { recursive: true, force: true });
    await rename(dir, here.snapshot);
    await ctx.snapshots.evict(imageId);
    return await ctx.catalog.install({
      ...meta,
      rootfs: here.rootfs,
      snapshot: here.snapshot,
      published: imageId,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
