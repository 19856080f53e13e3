/**
 * After a restart: takes back the sandboxes the control plane says run here
 * (their guest agents redial the new listener) and removes what the runtime
 * holds that nobody expects.
 */
import { join } from 'node:path';
import type { HostExpectedSandbox } from '@warren/protocol';
import type { HostContext } from '../context';
import { releaseSandboxDisk } from '../storage/sandbox-disk';
import { openChannel } from './connect';
import { destroySandbox } from './lifecycle';

/** Returns the ids that could not be recovered. */
export async function reconcile(
  ctx: HostContext,
  expected: HostExpectedSandbox[],
  /** Hibernated here: only their image on disk is kept; the runtime may still hold a stopped copy. */
  hibernated: string[],
): Promise<string[]> {
  for (const id of hibernated) ctx.registry.teardown(id, () => ctx.driver.destroy(id));
  const running = new Set(await ctx.driver.list());
  const lost: string[] = [];
  for (const sbx of expected) {
    if (!running.has(sbx.id)) {
      lost.push(sbx.id);
      await destroySandbox(ctx, sbx.id);
      continue;
    }
    running.delete(sbx.id);
    const workDir = join(ctx.sandboxesDir, sbx.id);
    const channelDir = join(workDir, 'chan');
    const channel = await openChannel(ctx, sbx.id, { channelDir }, sbx.env, sbx.network);
    ctx.registry.adopt({
      id: sbx.id,
      memoryMb: sbx.memory_mb,
      channel,
      workDir,
      paused: sbx.paused === true,
    });
    // A paused agent cannot dial; it will when resumed.
    if (sbx.paused) continue;
    try {
      await channel.waitReady(ctx.readyTimeoutMs);
    } catch {
      lost.push(sbx.id);
      await destroySandbox(ctx, sbx.id);
    }
  }
  for (const orphan of running) {
    await ctx.driver.destroy(orphan);
    await releaseSandboxDisk(join(ctx.sandboxesDir, orphan)).catch(() => undefined);
  }
  return lost;
}
