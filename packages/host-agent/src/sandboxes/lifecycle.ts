/**
 * The lifecycle of a live sandbox on this host: pause and resume (CPU frozen,
 * memory kept), hibernate and wake (everything saved to disk, memory freed),
 * destroy.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxNetwork } from '@warren/protocol';
import type { HostContext } from '../context';
import {
  releaseAllSandboxDisks,
  releaseDiskDir,
  releaseSandboxDisk,
  retireSandboxDisk,
} from '../storage/sandbox-disk';
import { openChannel } from './connect';
import { prepareDisk } from './disk';
import type { SandboxSpec } from '../runtime/driver';
import { retiredDisksKey, runtimeKey, usedImageKey } from './registry';
import { nextContainerId } from './runtime-ids';
import { hibernationImage, readSpec, readStorage, writeState } from './state-files';
import { Undo } from './undo';
import { admissionUsedMb } from './usage';

/** Freezes the sandbox's CPU; memory stays. Its agent cannot answer until resume. */
export async function pauseSandbox(ctx: HostContext, id: string): Promise<void> {
  const sbx = ctx.registry.live(id);
  if (sbx.paused) return;
  // A frozen sandbox cannot echo: terminal viewers are told to attach again (which resumes it).
  sbx.channel.dropAttachments();
  await ctx.driver.pause(sbx.containerId);
  sbx.paused = true;
}

export async function resumeSandbox(ctx: HostContext, id: string): Promise<void> {
  const sbx = ctx.registry.live(id);
  if (!sbx.paused) return;
  await ctx.driver.resume(sbx.containerId);
  sbx.paused = false;
  await sbx.channel.waitReady(ctx.readyTimeoutMs);
}

/**
 * Saves the whole sandbox (memory, processes, files) to disk and stops it:
 * its memory reservation is released and nothing of it runs until wake.
 */
export async function hibernateSandbox(
  ctx: HostContext,
  id: string,
  o?: { image_id?: string } | null, // null when it came over the wire as undefined
): Promise<{ shared: boolean }> {
  const sbx = ctx.registry.live(id);
  if (sbx.paused) await resumeSandbox(ctx, id);
  const image = hibernationImage(sbx.workDir);
  try {
    await sbx.channel.prepareCheckpoint();
    await rm(image, { recursive: true, force: true });
    await ctx.driver.checkpoint(sbx.containerId, image);
  } catch (err) {
    // Still running: let the agent dial back in and keep serving.
    await sbx.channel.listen().catch(() => undefined);
    throw err;
  }
  ctx.egress?.detach(id);
  // The image is complete (the written files too): stop what is left of the
  // sandbox now. Its disk is moved aside and released in the background, and
  // so is the runtime's removal of the stopped container, which takes
  // seconds: a wake waits for neither, it restores into a new container on a
  // new disk. (A disk that cannot move, of the layout before fs/, is released
  // in place, and a wake waits for that.)
  await sbx.channel.close();
  ctx.registry.remove(id);
  await ctx.driver.kill(sbx.containerId);
  retireContainer(ctx, sbx.containerId);
  const retired = await retireSandboxDisk(sbx.workDir);
  if (retired) ctx.registry.teardown(retiredDisksKey(id), () => releaseDiskDir(retired));
  else ctx.registry.teardown(id, () => releaseSandboxDisk(sbx.workDir));
  return { shared: o?.image_id ? await shareImage(ctx, sbx.workDir, o.image_id) : false };
}

/**
 * Puts a copy of a hibernation image into the snapshot store (hard links:
 * the local image stays for a wake here). False when it fails.
 */
async function shareImage(ctx: HostContext, workDir: string, imageId: string): Promise<boolean> {
  const copy = join(ctx.scratchDir, `hibernated-${imageId}`);
  try {
    await linkFiles(hibernationImage(workDir), copy);
    await ctx.snapshots.put(imageId, copy, await readSpec(workDir));
    return true;
  } catch {
    // Not shared: the sandbox can wake only here (the control plane records that).
    await ctx.snapshots.delete(imageId).catch(() => undefined);
    return false;
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

/** A copy of an image directory (its files, flat) made of hard links. */
async function linkFiles(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const name of await readdir(from)) await link(join(from, name), join(to, name));
}

/** Lets the runtime remove a stopped container in the background (settle waits for it). */
function retireContainer(ctx: HostContext, containerId: string): void {
  ctx.registry.teardown(runtimeKey(containerId), () => ctx.driver.destroy(containerId));
}

/** Restores a hibernated sandbox from its image, admitted against the memory budget again. */
export async function wakeSandbox(
  ctx: HostContext,
  id: string,
  o: { env: Record<string, string>; network?: SandboxNetwork },
): Promise<void> {
  if (ctx.registry.has(id)) return;
  await ctx.registry.teardownOf(id); // an in-place release of the disk (see hibernate)
  const workDir = join(ctx.sandboxesDir, id);
  const image = hibernationImage(workDir);
  const spec = await readSpec(workDir);
  const storage = await readStorage(workDir);
  ctx.registry.reserve(id, spec.memoryMb, await admissionUsedMb(ctx));
  const undo = new Undo();
  undo.push(async () => ctx.registry.release(id, spec.memoryMb));
  try {
    await releaseSandboxDisk(workDir); // whatever a failed hibernate left mounted
    undo.push(() => releaseSandboxDisk(workDir));
    const disk = await prepareDisk(ctx, workDir, storage, spec.filestoreDir !== undefined);
    const channel = await openChannel(ctx, id, spec, o.env, o.network);
    undo.push(async () => ctx.egress?.detach(id));
    undo.push(() => channel.close());
    // A new container: the one hibernated may still be being removed. Recorded
    // before the restore, so that after a restart the running one is known.
    // Its disk's paths are today's (an image hibernated before a layout change restores too).
    const woken: SandboxSpec = { ...spec, ...disk, id: nextContainerId(id, spec.id) };
    await writeState(workDir, woken, storage);
    undo.push(() => ctx.driver.destroy(woken.id));
    await ctx.driver.restore(woken, image);
    await channel.waitReady(ctx.readyTimeoutMs);
    await ctx.driver.limitCpu(woken.id, woken.cpu); // restored with every CPU, as a create
    ctx.registry.add({
      id,
      containerId: woken.id,
      memoryMb: spec.memoryMb,
      channel,
      workDir,
      paused: false,
    });
  } catch (err) {
    await undo.run(); // the image stays: the sandbox is still hibernated
    throw err;
  }
  // The image has served. Removing it takes tens of milliseconds for a large
  // one (a database's), so it is moved aside and removed in the background.
  const used = `${image}.used-${randomBytes(4).toString('hex')}`;
  const moved = await rename(image, used).then(
    () => true,
    () => false,
  );
  if (moved)
    ctx.registry.teardown(usedImageKey(id), () => rm(used, { recursive: true, force: true }));
  else await rm(image, { recursive: true, force: true });
}

/**
 * Stops a sandbox at once and releases its memory reservation; the runtime's
 * slower removal of its state finishes in the background. Safe to repeat.
 */
export async function destroySandbox(ctx: HostContext, id: string): Promise<void> {
  const sbx = ctx.registry.remove(id);
  ctx.egress?.detach(id);
  await sbx?.channel.close();
  const workDir = join(ctx.sandboxesDir, id);
  // Not live (hibernated, or a create that failed): its last container, if the runtime has it.
  const containerId =
    sbx?.containerId ??
    (await readSpec(workDir).then(
      (s) => s.id,
      () => id,
    ));
  await ctx.driver.kill(containerId);
  retireContainer(ctx, containerId);
  ctx.registry.teardown(id, async () => {
    // Every container of the sandbox is gone before its directory goes.
    await ctx.registry.runtimeTeardownsOf(id);
    await ctx.registry.teardownOf(retiredDisksKey(id));
    await ctx.registry.teardownOf(usedImageKey(id));
    // Throws if a mount cannot be removed: then the directory stays, and the volume's data too.
    await releaseAllSandboxDisks(workDir);
    await rm(workDir, { recursive: true, force: true });
  });
}

/** CPU time the sandbox has used, in nanoseconds (null when the runtime cannot tell). */
export async function oomKilled(ctx: HostContext, id: string): Promise<boolean> {
  if (!ctx.registry.has(id)) return false;
  return ((await ctx.driver.oomKills(ctx.registry.live(id).containerId)) ?? 0) > 0;
}

export async function cpuUsageNs(ctx: HostContext, id: string): Promise<number | null> {
  if (!ctx.registry.has(id)) return null;
  return ctx.driver.cpuUsageNs(ctx.registry.live(id).containerId);
}
