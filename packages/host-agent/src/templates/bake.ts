/**
 * The bake: boot a sandbox from a root file system, wait for its agent, warm
 * it up, start the template's start command and wait for its readiness
 * check, then checkpoint it. Every create restores that image. Also the
 * built-in templates: built when missing, baked again when the guest agent
 * or the runtime changed.
 */
import { randomBytes } from 'node:crypto';
import { rm, statfs } from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  GUEST_PATHS,
  WarrenError,
  type FileList,
  type GuestEgress,
  type GuestHello,
} from '@warren/protocol';
import type { HostContext } from '../context';
import { GuestChannel } from '../guest/channel';
import { newDataToken } from '../guest/data-connections';
import type { SandboxSpec } from '../runtime/driver';
import { prepareDisk } from '../sandboxes/disk';
import { runtimeKey } from '../sandboxes/registry';
import { readSpec } from '../sandboxes/state-files';
import { officialRecipe, type TemplateRecord } from './catalog';
import { duBytes } from './disk-usage';
import type { Progress } from './rootfs';
import { bakeOptionsOf, startAndWaitReady, type BakeOptions } from './start';

/** A baked image and what it was baked with (recorded in template.json). */
export interface Baked {
  image: string;
  guestKey: string;
  runtimeVersion: string;
  /** The size of the root's files, summed while the bake ran. */
  rootfsBytes: number;
}

export async function bake(
  ctx: HostContext,
  rootfs: string,
  cpu: number,
  memoryMb: number,
  imageDir: string,
  opts: BakeOptions = {},
): Promise<Baked> {
  const guest = await ctx.guestBundle();
  const rootfsBytes = duBytes(rootfs); // meanwhile: a root has thousands of files
  const id = `bake-${randomBytes(6).toString('hex')}`;
  const workDir = join(ctx.sandboxesDir, id);
  const channelDir = join(workDir, 'chan');
  const channel = new GuestChannel(ctx.driver.guestEndpoint({ channelDir }), () => ({
    sandbox_id: id,
    env: {},
    defaults: defaultsOf(opts),
  }));
  // Also what closing the host agent calls: the channel closes for good, so
  // every wait of the bake fails at once, and run's finally cleans up after it.
  const stop = async () => {
    await channel.close();
    await ctx.driver.destroy(id);
  };
  const run = async (): Promise<Baked> => {
    try {
      const spec: SandboxSpec = {
        id,
        rootfs,
        guestDir: guest.dir,
        channelDir,
        workDir,
        cpu,
        memoryMb,
        hostname: 'warren',
        env: {},
        // The snapshot gets the file-backed overlay and the volumes mount every create needs.
        ...(await prepareDisk(ctx, workDir, { diskMb: null, volumes: [] }, true)),
      };
      await channel.listen();
      await ctx.driver.boot(spec);
      await channel.waitReady(60_000);
      // Warm the paths every create uses first, so restored copies start warm.
      for (let i = 0; i < 3; i++) {
        await channel.json({
          method: 'POST',
          path: GUEST_PATHS.processes,
          json: { cmd: 'true', args: [], background: true },
        });
        await channel.json({ method: 'GET', path: GUEST_PATHS.filesStat, query: { path: '/' } });
      }
      await startAndWaitReady(channel, opts);
      // After the start command, which must not inherit the warm-up's egress settings.
      await warmFirstConnection(ctx, channel, id);
      await channel.prepareCheckpoint();
      await rm(imageDir, { recursive: true, force: true });
      await ctx.driver.checkpoint(id, imageDir);
      return {
        image: imageDir,
        guestKey: guest.key,
        runtimeVersion: ctx.runtimeVersion,
        rootfsBytes: await rootfsBytes,
      };
    } finally {
      // In the background: runsc's removal of a container waits until its
      // process is reaped, which can take a second or more after a checkpoint
      // (see GvisorDriver.destroy). Closing the host agent waits for it.
      ctx.registry.teardown(runtimeKey(id), async () => {
        await stop();
        await rm(workDir, { recursive: true, force: true });
      });
    }
  };
  return ctx.registry.holdBake(id, stop, run());
}

/**
 * A recipe's root changes up to this size stay in its build sandbox's image:
 * the template is that sandbox, checkpointed (see bakeBuildSandbox).
 */
export const IMAGE_CHANGES_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The bake of a small recipe: its build sandbox, restored from the base's
 * image with the steps run in it, becomes the template's image as it is,
 * without capturing its changes into a root and booting that root again.
 * What the steps wrote to the root stays in the sandbox's file-backed
 * overlay, which the checkpoint saves and every create restores, so only a
 * sandbox whose overlay holds at most IMAGE_CHANGES_MAX_BYTES is baked this
 * way; null (nothing done) for a larger one, or a driver without that
 * overlay: the caller captures the changes and bakes the new root instead.
 *
 * As in a bake of a root, the copies start with no process but the agent and
 * the start command, an empty /tmp, and the template's env, workdir and user.
 */
export async function bakeBuildSandbox(
  ctx: HostContext,
  id: string,
  /** The size of the root it runs on (the base's, which the new template's root copies). */
  rootfsBytes: number,
  imageDir: string,
  opts: BakeOptions = {},
): Promise<Baked | null> {
  const sbx = ctx.registry.live(id);
  const spec = await readSpec(sbx.workDir);
  if (!spec.filestoreDir) return null;
  const changed = await usedBytes(spec.filestoreDir);
  const mib = (changed / 2 ** 20).toFixed(1);
  if (changed > IMAGE_CHANGES_MAX_BYTES) {
    opts.progress?.(`${mib} MiB of changes: capturing them into the template's root`);
    return null;
  }
  opts.progress?.(`${mib} MiB of changes: kept in the build sandbox's image`);
  const { channel } = sbx;
  await channel.json({ method: 'POST', path: GUEST_PATHS.reset });
  // Through the agent's file routes: quicker than a program to start.
  const { items } = await channel.json<FileList>({
    path: GUEST_PATHS.filesList,
    query: { path: '/tmp' },
  });
  await Promise.all(
    items.map((f) =>
      channel.json({
        method: 'DELETE',
        path: GUEST_PATHS.files,
        query: { path: f.path, recursive: '1' },
      }),
    ),
  );
  // The defaults every copy starts with, as the hello of a bake gives them.
  const egress = egressForImage(ctx);
  await channel.json({
    method: 'POST',
    path: GUEST_PATHS.hello,
    json: {
      sandbox_id: id,
      env: {},
      defaults: defaultsOf(opts),
      ...(egress && { egress }),
    } satisfies GuestHello,
  });
  await startAndWaitReady(channel, opts);
  await channel.prepareCheckpoint();
  await rm(imageDir, { recursive: true, force: true });
  await ctx.driver.checkpoint(sbx.containerId, imageDir);
  return {
    image: imageDir,
    // The agent in the image is the one the base was baked with.
    guestKey: basename(spec.guestDir),
    runtimeVersion: ctx.runtimeVersion,
    rootfsBytes: rootfsBytes + changed,
  };
}

/**
 * Bytes in use on the file system holding `dir`: the sandbox's own disk, where
 * gVisor keeps the overlay's filestore as a file it unlinks at once.
 */
async function usedBytes(dir: string): Promise<number> {
  const fs = await statfs(dir);
  return (fs.blocks - fs.bfree) * fs.bsize;
}

/**
 * What a restored copy does first: dial in on a new connection and take a
 * hello with the egress settings. Done once here, so the image holds that
 * code warm and the install's CA already in the root's trust store, the
 * egress ports listening (the copy's hello only swaps the token). Measured:
 * a restored copy's first hello took about 85 ms before this and the agent's
 * --no-memory-reducer, about 21 ms with both; on a warm connection 2 to 5 ms.
 */
async function warmFirstConnection(ctx: HostContext, channel: GuestChannel, id: string) {
  await channel.prepareCheckpoint();
  await channel.listen();
  await channel.waitReady(60_000);
  const egress = egressForImage(ctx);
  if (!egress) return;
  await channel.json({
    method: 'POST',
    path: GUEST_PATHS.hello,
    json: { sandbox_id: id, env: {}, egress } satisfies GuestHello,
  });
}

/** What a template's copies start with, as a hello gives it to the agent (which keeps it). */
function defaultsOf(opts: BakeOptions): GuestHello['defaults'] {
  return {
    env: opts.env ?? {},
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    ...(opts.user ? { user: opts.user } : {}),
  };
}

/**
 * Egress settings for a hello before a checkpoint, so the image holds the
 * install's CA and the egress ports listening (each copy's hello swaps the
 * token); none where the driver's sandboxes are not isolated from the host.
 */
function egressForImage(ctx: HostContext): GuestEgress | undefined {
  if (!ctx.egress || !ctx.driver.capabilities.egress) return undefined;
  return { token: newDataToken(), ca_pem: ctx.egress.caPem };
}

/**
 * Makes sure a built-in template has its root file system and a snapshot
 * baked with the current guest agent and runtime; builds what is missing.
 */
export async function ensureBuiltin(
  ctx: HostContext,
  name: string,
  progress: Progress,
  opts: { force?: boolean } = {},
): Promise<TemplateRecord> {
  const recipe = officialRecipe(name);
  if (!recipe) throw new WarrenError('TEMPLATE_NOT_FOUND', `no built-in template ${name}`);
  const guest = await ctx.guestBundle();
  const existing = await ctx.catalog.read(name);
  if (
    !opts.force &&
    existing?.state === 'ready' &&
    existing.guest_key === guest.key &&
    existing.runtime_version === ctx.runtimeVersion
  ) {
    return existing;
  }
  // One build of a name at a time; a failure shows as state `error` in the list.
  return ctx.catalog.official.run(name, async () => {
    const rootfs = await ctx.catalog.ensureRootfs(recipe, progress);
    progress(`baking snapshot of template ${name}`);
    const started = Date.now();
    const baked = await bake(
      ctx,
      rootfs,
      recipe.maxCpu,
      recipe.maxMemoryMb,
      join(ctx.catalog.dir(name), 'snapshot.tmp'),
      bakeOptionsOf(recipe, progress),
    );
    const rec = await ctx.catalog.commit({ ...recipe, buildMs: Date.now() - started }, baked);
    progress(`template ${name} ready (snapshot baked in ${Date.now() - started} ms)`);
    return rec;
  });
}
