/**
 * Creating a sandbox: a restore of a checkpoint image (a template's baked
 * snapshot, a snapshot from the store, or a capture of a running sandbox).
 * Refused at once when it does not fit the memory budget; on any failure
 * every step is undone and nothing is left behind.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  GUEST_PATHS,
  WarrenError,
  type HostCreateRequest,
  type HostCreatePhases,
  type HostCreateResult,
  type HostSandboxSizing,
  type HostVolumeAttachment,
  type SandboxSource,
} from '@warren/protocol';
import type { HostContext } from '../context';
import type { SandboxSpec } from '../runtime/driver';
import type { TemplateRecord } from '../templates/catalog';
import { releaseSandboxDisk, type HostVolume } from '../storage/sandbox-disk';
import type { Captures } from './capture';
import { checkSandboxNetwork, openChannel, refuseVolumesWithoutDisk } from './connect';
import { prepareDisk } from './disk';
import { writeState, type SandboxStorage } from './state-files';
import { Undo } from './undo';
import { admissionUsedMb } from './usage';
import { destroySandbox } from './lifecycle';

/** A checkpoint image and the root and guest agent it must be restored with. */
interface RestoreSource {
  image: string;
  rootfs: string;
  guestDir: string;
  hasDisk: boolean;
}

function hostVolumes(volumes: HostVolumeAttachment[] = []): HostVolume[] {
  return volumes.map((v) => ({
    id: v.id,
    name: v.name,
    mountPath: v.mount_path,
    readOnly: v.read_only,
  }));
}

/** A snapshot or capture restores with the root and guest agent it was captured with. */
function fromSpec(image: string, spec: SandboxSpec): RestoreSource {
  return {
    image,
    rootfs: spec.rootfs,
    guestDir: spec.guestDir,
    hasDisk: spec.filestoreDir !== undefined,
  };
}

/** The request's sizes, or the template's defaults, within the template's limits. */
function sizing(t: TemplateRecord, req: HostCreateRequest): HostSandboxSizing {
  const cpu = req.cpu ?? t.default_cpu;
  const memoryMb = req.memory_mb ?? t.default_memory_mb;
  if (cpu > t.max_cpu || memoryMb > t.max_memory_mb || memoryMb < 64) {
    throw new WarrenError(
      'RESOURCES_OUT_OF_RANGE',
      `template ${t.name} allows cpu up to ${t.max_cpu} and memory_mb from 64 to ${t.max_memory_mb}`,
      { max_cpu: t.max_cpu, max_memory_mb: t.max_memory_mb },
    );
  }
  const diskMb = req.disk_mb ?? t.default_disk_mb;
  if (diskMb > t.max_disk_mb || diskMb < 64) {
    throw new WarrenError(
      'RESOURCES_OUT_OF_RANGE',
      `template ${t.name} allows disk_mb from 64 to ${t.max_disk_mb}`,
      { max_disk_mb: t.max_disk_mb },
    );
  }
  return { cpu, memory_mb: memoryMb, disk_mb: diskMb };
}

export async function createSandbox(
  ctx: HostContext,
  captures: Captures,
  req: HostCreateRequest,
): Promise<HostCreateResult> {
  const phases = new Phases();
  if (ctx.registry.has(req.id))
    throw new WarrenError('INTERNAL', `sandbox ${req.id} already exists on this host`);
  const template = await ctx.catalog.get(req.template);
  const size = sizing(template, req);
  if (req.network) checkSandboxNetwork(ctx, req.network);
  const scratch = join(ctx.scratchDir, `restore-${req.id}`);
  const undo = new Undo();
  try {
    const source = await resolveSource(ctx, captures, template, req.from, scratch);
    await restore(ctx, req, size, source, undo, phases);
  } catch (err) {
    await undo.run();
    throw err;
  } finally {
    // A snapshot's image was materialized for this restore only.
    await rm(scratch, { recursive: true, force: true });
  }
  if (req.reset_processes) {
    try {
      await ctx.registry.live(req.id).channel.json({ method: 'POST', path: GUEST_PATHS.reset });
    } catch (err) {
      await destroySandbox(ctx, req.id);
      throw err;
    }
  }
  return { ...size, phases_ms: phases.done() };
}

/** Timestamps of a create's phases (HostCreatePhases), taken as it goes. */
class Phases {
  private readonly started = performance.now();
  private readonly at: Partial<Record<'admitted' | 'disk' | 'restored' | 'ready', number>> = {};
  connectedAt: number | null = null;

  mark(phase: 'admitted' | 'disk' | 'restored' | 'ready'): void {
    this.at[phase] = performance.now();
  }

  done(): HostCreatePhases {
    const end = performance.now();
    const { admitted = end, disk = end, restored = end, ready = end } = this.at;
    const connected = Math.min(Math.max(this.connectedAt ?? restored, restored), ready);
    const ms = (n: number) => Math.round(n * 10) / 10;
    return {
      prepare: ms(admitted - this.started),
      disk: ms(disk - admitted),
      restore: ms(restored - disk),
      connect: ms(connected - restored),
      hello: ms(ready - connected),
      finish: ms(end - ready),
    };
  }
}

async function resolveSource(
  ctx: HostContext,
  captures: Captures,
  template: TemplateRecord,
  from: SandboxSource | undefined,
  scratch: string,
): Promise<RestoreSource> {
  if (!from) {
    const guestDir = (await ctx.guestBundle()).dir;
    return { image: template.snapshot, rootfs: template.rootfs, guestDir, hasDisk: true };
  }
  if (from.kind === 'capture') {
    const c = captures.get(from.capture_id);
    return fromSpec(c.imageDir, c.spec);
  }
  const manifest = await ctx.snapshots.materialize<SandboxSpec>(from.snapshot_id, scratch);
  return fromSpec(scratch, manifest.meta);
}

async function restore(
  ctx: HostContext,
  req: HostCreateRequest,
  size: HostSandboxSizing,
  source: RestoreSource,
  undo: Undo,
  phases: Phases,
): Promise<void> {
  const storage: SandboxStorage = { diskMb: size.disk_mb, volumes: hostVolumes(req.volumes) };
  ctx.registry.reserve(req.id, size.memory_mb, await admissionUsedMb(ctx));
  undo.push(async () => ctx.registry.release(req.id, size.memory_mb));
  const workDir = join(ctx.sandboxesDir, req.id);
  const channelDir = join(workDir, 'chan');
  await mkdir(channelDir, { recursive: true });
  undo.push(() => rm(workDir, { recursive: true, force: true }));
  const channel = await openChannel(ctx, req.id, { channelDir }, req.env, req.network);
  undo.push(async () => ctx.egress?.detach(req.id));
  undo.push(() => channel.close());
  if (storage.volumes.length > 0) refuseVolumesWithoutDisk(ctx, source.hasDisk);
  // Unmounted before the work directory is removed: never delete through a volume mount.
  undo.push(() => releaseSandboxDisk(workDir));
  phases.mark('admitted');
  const disk = await prepareDisk(ctx, workDir, storage, source.hasDisk);
  phases.mark('disk');
  const spec: SandboxSpec = {
    id: req.id,
    rootfs: source.rootfs,
    guestDir: source.guestDir,
    channelDir,
    workDir,
    cpu: size.cpu,
    memoryMb: size.memory_mb,
    hostname: req.id.replace(/_/g, '-'),
    env: {},
    ...disk,
  };
  await writeState(workDir, spec, storage);
  undo.push(() => ctx.driver.destroy(req.id));
  await ctx.driver.restore(spec, source.image);
  phases.mark('restored');
  await channel.waitReady(ctx.readyTimeoutMs);
  // Restored with every CPU (see RuntimeDriver.restore); held to its size before anyone uses it.
  await ctx.driver.limitCpu(req.id, size.cpu);
  phases.mark('ready');
  phases.connectedAt = channel.connectedAt;
  if (storage.volumes.length > 0) {
    await channel.json({
      method: 'POST',
      path: GUEST_PATHS.volumes,
      json: {
        volumes: storage.volumes.map((v) => ({
          name: v.name,
          mount_path: v.mountPath,
          read_only: v.readOnly,
        })),
      },
    });
  }
  // The reservation now belongs to the live sandbox: removing it from the registry releases it.
  ctx.registry.add({
    id: req.id,
    containerId: req.id,
    memoryMb: size.memory_mb,
    channel,
    workDir,
    paused: false,
  });
}
