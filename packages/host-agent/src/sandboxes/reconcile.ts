/**
 * After a restart: takes back the sandboxes the control plane says run here
 * (their guest agents redial the new listener) and removes what the runtime
 * holds that nobody expects: containers of stopped or hibernated sandboxes,
 * and containers a wake had left behind before the restart.
 */
import { join } from 'node:path';
import type { HostExpectedSandbox } from '@warren/protocol';
import type { HostContext } from '../context';
import { releaseAllSandboxDisks, releaseRetiredDisks } from '../storage/sandbox-disk';
import { openChannel } from './connect';
import { destroySandbox } from './lifecycle';
import { runtimeKey } from './registry';
import { ownerOf } from './runtime-ids';
import { readSpec } from './state-files';

/** The runtime container a sandbox runs in and its CPUs, as its last create or wake recorded them. */
async function containerOf(
  ctx: HostContext,
  id: string,
): Promise<{ containerId: string; cpu?: number }> {
  return readSpec(join(ctx.sandboxesDir, id)).then(
    (s) => ({ containerId: s.id, cpu: s.cpu }),
    () => ({ containerId: id }),
  );
}

/** Returns the ids that could not be recovered. */
export async function reconcile(
  ctx: HostContext,
  expected: HostExpectedSandbox[],
  /** Hibernated here: only their image on disk is kept; the runtime may still hold stopped copies. */
  hibernated: string[],
): Promise<string[]> {
  const running = new Set(await ctx.driver.list());
  const held = await ctx.driver.list({ all: true });
  const lost: string[] = [];
  const kept = new Set<string>();
  for (const sbx of expected) {
    const { containerId, cpu } = await containerOf(ctx, sbx.id);
    if (!running.has(containerId)) {
      lost.push(sbx.id);
      await destroySandbox(ctx, sbx.id);
      continue;
    }
    kept.add(containerId);
    const workDir = join(ctx.sandboxesDir, sbx.id);
    const channelDir = join(workDir, 'chan');
    const channel = await openChannel(ctx, sbx.id, { channelDir }, sbx.env, sbx.network);
    ctx.registry.adopt({
      id: sbx.id,
      containerId,
      memoryMb: sbx.memory_mb,
      channel,
      workDir,
      paused: sbx.paused === true,
    });
    // A restart between a restore and its limitCpu left the sandbox without its quota.
    if (cpu !== undefined) await ctx.driver.limitCpu(containerId, cpu).catch(() => undefined);
    // A paused agent cannot dial; it will when resumed.
    if (sbx.paused) continue;
    try {
      await channel.waitReady(ctx.readyTimeoutMs);
    } catch {
      lost.push(sbx.id);
      await destroySandbox(ctx, sbx.id);
    }
  }
  const live = new Set(expected.map((s) => s.id));
  const asleep = new Set(hibernated);
  for (const containerId of held) {
    if (kept.has(containerId)) continue;
    const owner = ownerOf(containerId);
    // A stopped container of a sandbox that runs in another one, or sleeps: removed in the background.
    if (live.has(owner) || asleep.has(owner)) {
      ctx.registry.teardown(runtimeKey(containerId), () => ctx.driver.destroy(containerId));
      continue;
    }
    await ctx.driver.destroy(containerId);
    await releaseAllSandboxDisks(join(ctx.sandboxesDir, owner)).catch(() => undefined);
  }
  // Disks a hibernate had moved aside and not released yet before the restart.
  for (const id of [...live, ...asleep].filter((s) => !lost.includes(s)))
    await releaseRetiredDisks(join(ctx.sandboxesDir, id)).catch(() => undefined);
  return lost;
}
