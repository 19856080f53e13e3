/**
 * The bake: boot a sandbox from a root file system, wait for its agent, warm
 * it up, start the template's start command and wait for its readiness
 * check, then checkpoint it. Every create restores that image. Also the
 * built-in templates: built when missing, baked again when the guest agent
 * or the runtime changed.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { GUEST_PATHS, WarrenError } from '@warren/protocol';
import type { HostContext } from '../context';
import { GuestChannel } from '../guest/channel';
import { newDataToken } from '../guest/data-connections';
import type { SandboxSpec } from '../runtime/driver';
import { prepareDisk } from '../sandboxes/disk';
import { runtimeKey } from '../sandboxes/registry';
import { officialRecipe, type TemplateRecord } from './catalog';
import { duBytes } from './disk-usage';
import type { Progress } from './rootfs';
import { startAndWaitReady, type BakeOptions } from './start';

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
    defaults: {
      env: opts.env ?? {},
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      ...(opts.user ? { user: opts.user } : {}),
    },
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
  if (!ctx.egress || !ctx.driver.capabilities.egress) return;
  await channel.json({
    method: 'POST',
    path: GUEST_PATHS.hello,
    json: {
      sandbox_id: id,
      env: {},
      egress: {
        token: newDataToken(),
        ca_pem: ctx.egress.caPem,
      },
    },
  });
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
      { env: recipe.env, cwd: recipe.workdir, start: recipe.start, ready: recipe.ready, progress },
    );
    const rec = await ctx.catalog.commit({ ...recipe, buildMs: Date.now() - started }, baked);
    progress(`template ${name} ready (snapshot baked in ${Date.now() - started} ms)`);
    return rec;
  });
}
