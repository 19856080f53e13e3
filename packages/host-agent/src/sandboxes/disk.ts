/** The disk of a sandbox about to be restored, with its volumes bound in. */
import type { HostContext } from '../context';
import { prepareSandboxDisk, type SandboxDisk } from '../storage/sandbox-disk';
import type { SandboxStorage } from './state-files';

/**
 * Only for drivers that can limit it, and only when the image was taken with
 * a file-backed overlay (a snapshot from before disk limits keeps its
 * in-memory overlay).
 */
export async function prepareDisk(
  ctx: HostContext,
  workDir: string,
  storage: SandboxStorage,
  imageHasDisk: boolean,
): Promise<Partial<SandboxDisk>> {
  if (!ctx.driver.capabilities.diskLimit || !imageHasDisk) return {};
  for (const v of storage.volumes) await ctx.volumes.ensureMounted(v.id);
  return prepareSandboxDisk(
    workDir,
    storage.diskMb,
    storage.volumes,
    (id) => ctx.volumes.data(id),
    ctx.diskPool ?? undefined,
  );
}
