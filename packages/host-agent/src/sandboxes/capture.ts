/**
 * Captures of running sandboxes: memory, processes and files saved while the
 * sandbox goes on running (it is held only for the checkpoint itself). A
 * capture either becomes a snapshot in the snapshot store, or is kept on
 * this host for fork children to restore from until it is released.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import type { HostContext } from '../context';
import type { SandboxSpec } from '../runtime/driver';
import { resumeSandbox } from './lifecycle';
import { readSpec } from './state-files';

interface Capture {
  imageDir: string;
  spec: SandboxSpec;
}

/** Checkpoints a live sandbox into imageDir, leaving it running. */
async function captureInto(
  ctx: HostContext,
  id: string,
  imageDir: string,
): Promise<{ spec: SandboxSpec; pausedMs: number }> {
  const sbx = ctx.registry.live(id);
  if (sbx.paused) await resumeSandbox(ctx, id);
  const spec = await readSpec(sbx.workDir);
  const started = performance.now();
  try {
    await sbx.channel.prepareCheckpoint();
    await rm(imageDir, { recursive: true, force: true });
    await ctx.driver.checkpoint(sbx.containerId, imageDir, { leaveRunning: true });
  } finally {
    // The agent dials back in as soon as its socket is there again.
    await sbx.channel.listen();
  }
  await sbx.channel.waitReady(ctx.readyTimeoutMs);
  return { spec, pausedMs: performance.now() - started };
}

export class Captures {
  private readonly held = new Map<string, Capture>();

  constructor(private readonly ctx: HostContext) {}

  /** A capture kept on this host for fork children (`{kind: 'capture'}` sources). */
  async capture(id: string): Promise<{ capture_id: string; paused_ms: number }> {
    const captureId = `cap_${randomBytes(8).toString('hex')}`;
    const dir = join(this.ctx.scratchDir, captureId);
    try {
      const { spec, pausedMs } = await captureInto(this.ctx, id, join(dir, 'image'));
      this.held.set(captureId, { imageDir: join(dir, 'image'), spec });
      return { capture_id: captureId, paused_ms: Math.round(pausedMs) };
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  get(captureId: string): Capture {
    const c = this.held.get(captureId);
    if (!c) throw new WarrenError('INVALID_REQUEST', `no capture ${captureId} on this host`);
    return c;
  }

  async release(captureId: string): Promise<void> {
    const c = this.held.get(captureId);
    this.held.delete(captureId);
    if (c) await rm(join(c.imageDir, '..'), { recursive: true, force: true });
  }

  /** Captures a sandbox into the snapshot store; the image's spec is the snapshot's metadata. */
  async snapshot(
    id: string,
    snapshotId: string,
  ): Promise<{ size_bytes: number; paused_ms: number }> {
    const dir = join(this.ctx.scratchDir, `snapshot-${snapshotId}`);
    try {
      const { spec, pausedMs } = await captureInto(this.ctx, id, join(dir, 'image'));
      const manifest = await this.ctx.snapshots.put(snapshotId, join(dir, 'image'), spec);
      return {
        size_bytes: manifest.files.reduce((n, f) => n + f.size, 0),
        paused_ms: Math.round(pausedMs),
      };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Removes every capture still held (at close). */
  async releaseAll(): Promise<void> {
    for (const id of [...this.held.keys()]) await this.release(id);
  }
}
