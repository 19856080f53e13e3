/**
 * What a live sandbox uses, as this host measures it: CPU and memory from
 * the runtime (the sandbox's cgroup for gVisor), disk from the file system
 * of its writable layer, network from the egress proxy's relayed sockets.
 */
import { stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { HostSandboxUsage } from '@warren/protocol';
import type { HostContext } from '../context';
import { DISK_MOUNT, sandboxDiskPaths } from '../storage/sandbox-disk';

/**
 * Bytes in use on the sandbox's own disk (see storage/sandbox-disk.ts): its
 * written files and its file system's metadata. Null when the disk is not a
 * file system of its own (a driver without disk limits keeps no such disk).
 */
export async function diskUsedBytes(workDir: string): Promise<number | null> {
  const { root } = sandboxDiskPaths(workDir);
  const parent = await stat(workDir).catch(() => null);
  if (!parent) return null;
  // The mount is `fs` in the disk directory, or the directory itself (an older disk).
  for (const dir of [join(root, DISK_MOUNT), root]) {
    const disk = await stat(dir).catch(() => null);
    if (!disk || disk.dev === parent.dev) continue;
    const s = await statfs(dir).catch(() => null);
    return s ? (s.blocks - s.bfree) * s.bsize : null;
  }
  return null;
}

export async function sandboxUsage(ctx: HostContext, id: string): Promise<HostSandboxUsage | null> {
  const startedAt = ctx.registry.startedAt(id);
  if (!ctx.registry.has(id) || startedAt === undefined) return null;
  const sbx = ctx.registry.live(id);
  const [cpuNs, memory, disk] = await Promise.all([
    ctx.driver.cpuUsageNs(sbx.containerId),
    ctx.driver.memoryBytes(sbx.containerId),
    diskUsedBytes(sbx.workDir),
  ]);
  const net = ctx.egress?.bytes(id) ?? { rx: 0, tx: 0 };
  return {
    started_at: startedAt,
    cpu_seconds: cpuNs === null ? null : cpuNs / 1e9,
    memory_bytes: memory,
    disk_bytes: disk,
    net_rx_bytes: net.rx,
    net_tx_bytes: net.tx,
  };
}

/**
 * Memory the live sandboxes count for in admission, in MiB: each as measured,
 * at least startMb (one the runtime cannot measure counts its memory_mb).
 */
export async function admissionUsedMb(ctx: HostContext): Promise<number> {
  const startMb = ctx.registry.memory.startMb;
  const each = await Promise.all(
    ctx.registry.ids().map(async (id) => {
      const sbx = ctx.registry.live(id);
      const bytes = await ctx.driver.memoryBytes(sbx.containerId);
      return bytes === null ? sbx.memoryMb : Math.max(startMb, bytes / 1024 / 1024);
    }),
  );
  return each.reduce((a, b) => a + b, 0);
}

/** Frees what the host can of a live sandbox's memory (see RuntimeDriver.reclaim), in MiB. */
export async function reclaimSandbox(ctx: HostContext, id: string): Promise<number | null> {
  if (!ctx.registry.has(id)) return null;
  const bytes = await ctx.driver.reclaim(ctx.registry.live(id).containerId);
  return bytes === null ? null : Math.round(bytes / 1024 / 1024);
}

/** Memory the live sandboxes use now, in MiB; undefined when the runtime tells for none of them. */
export async function memoryUsedMb(ctx: HostContext): Promise<number | undefined> {
  const each = await Promise.all(
    ctx.registry.ids().map((id) => ctx.driver.memoryBytes(ctx.registry.live(id).containerId)),
  );
  const known = each.filter((b): b is number => b !== null);
  if (known.length === 0 && each.length > 0) return undefined;
  return Math.round(known.reduce((a, b) => a + b, 0) / 1024 / 1024);
}
