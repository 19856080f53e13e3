import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WarrenError } from '@warren/protocol';
import type {
  CpuWeight,
  DriverCapabilities,
  GuestEndpoint,
  RuntimeDriver,
  SandboxSpec,
} from '../driver';
import { UnixEndpoint } from '../unix-endpoint';
import { CPU_PERIOD_US, SPEC_REVISION, cpuQuotaUs, ociSpec } from './oci-spec';
import { runsc, type RunscOptions } from './runsc';

const CGROUP_ROOT = '/sys/fs/cgroup';
/** An idle sandbox's CPU weight: 1/64 of the default (v1 shares, v2 weight). */
const IDLE_CPU_SHARES = '16';
const IDLE_CPU_WEIGHT = '2';
/** Writes a file of the sandbox's v1 cpu cgroup, or else its v2 twin; RUNTIME_ERROR when neither. */
async function writeCpuCgroup(
  id: string,
  [v1File, v1Value]: [string, string],
  [v2File, v2Value]: [string, string],
  what: string,
): Promise<void> {
  try {
    await writeFile(join(CGROUP_ROOT, 'cpu', id, v1File), v1Value);
  } catch (v1) {
    try {
      await writeFile(join(CGROUP_ROOT, id, v2File), v2Value);
    } catch (v2) {
      throw new WarrenError(
        'RUNTIME_ERROR',
        `${what}: ${(v1 as Error).message}; ${(v2 as Error).message}`,
      );
    }
  }
}
/** Restores take well under a second; many at once on a loaded host, some seconds. */
const RESTORE_TIMEOUT_MS = 60_000;

/**
 * The root overlay's medium. With a filestore directory, gVisor keeps the
 * sandbox's written files in one file there (created and unlinked at start)
 * instead of in sentry memory; on a size-limited file system, a write past
 * the limit fails in the sandbox with ENOSPC. A checkpoint holds that file's
 * contents, so a restore may use another directory. Images of both kinds do
 * not mix: a restore must use the medium its image was taken with.
 */
function overlay(spec: SandboxSpec): string {
  return spec.filestoreDir ? `dir=${spec.filestoreDir}` : 'memory';
}

/** gVisor (runsc) driver: sandboxes without a network device, root overlay in sandbox memory. */
export class GvisorDriver implements RuntimeDriver {
  readonly name = 'gvisor';
  readonly capabilities: DriverCapabilities = {
    checkpoint: true,
    pause: true,
    network: 'none',
    diskLimit: true,
    egress: true,
  };

  constructor(private readonly opts: RunscOptions) {}

  async version(): Promise<string> {
    const out = await runsc(this.opts, ['--version']);
    return `${/runsc version (\S+)/.exec(out)?.[1] ?? out.trim()} spec ${SPEC_REVISION}`;
  }

  private async writeBundle(
    spec: SandboxSpec,
    o: { unlimitedCpu?: boolean } = {},
  ): Promise<{ bundle: string; log: string }> {
    const bundle = join(spec.workDir, 'bundle');
    await mkdir(bundle, { recursive: true });
    await writeFile(join(bundle, 'config.json'), JSON.stringify(ociSpec(spec, o)));
    return { bundle, log: join(spec.workDir, 'runsc.log') };
  }

  async boot(spec: SandboxSpec): Promise<void> {
    const { bundle, log } = await this.writeBundle(spec);
    await runsc(this.opts, ['run', '-detach', '--bundle', bundle, spec.id], log, overlay(spec));
  }

  /**
   * A restore that has not finished after RESTORE_TIMEOUT_MS is given up (the
   * caller destroys the container): this runsc can hang for good restoring
   * some images, in its netstack's restore of TCP endpoints. Without a CPU
   * quota (see RuntimeDriver.restore): held to one CPU from the start, a
   * database's wake was throttled in 7 to 9 of its 9 to 10 periods of 100 ms.
   */
  async restore(spec: SandboxSpec, imageDir: string): Promise<void> {
    const { bundle, log } = await this.writeBundle(spec, { unlimitedCpu: true });
    await runsc(
      this.opts,
      ['restore', '-detach', '--image-path', imageDir, '--bundle', bundle, spec.id],
      log,
      overlay(spec),
      RESTORE_TIMEOUT_MS,
    );
  }

  async checkpoint(
    id: string,
    imageDir: string,
    opts: { leaveRunning?: boolean } = {},
  ): Promise<void> {
    await mkdir(imageDir, { recursive: true });
    const leave = opts.leaveRunning ? ['--leave-running'] : [];
    // The image is complete when this returns. Without --leave-running the
    // sandbox then winds down by itself, and runsc records it as stopped about
    // two seconds later; callers kill it rather than wait (see HostAgent.hibernate).
    // Uncompressed: an image is about four times larger (13 MB instead of 3 MB for
    // a small Python process), but a restore takes half the CPU time, and
    // restores (creates, forks, wakes) are what must be fast.
    await runsc(this.opts, [
      'checkpoint',
      ...leave,
      '--compression=none',
      '--image-path',
      imageDir,
      id,
    ]);
  }

  async pause(id: string): Promise<void> {
    await runsc(this.opts, ['pause', id]);
  }

  async resume(id: string): Promise<void> {
    await runsc(this.opts, ['resume', id]);
  }

  /**
   * Kills the sandbox process directly: the sandbox and everything in it stop
   * at once (its gofer exits when the sandbox is gone). runsc's own teardown,
   * in destroy, takes one to two seconds more and can run in the background.
   */
  async kill(id: string): Promise<void> {
    const pid = await this.sandboxPid(id);
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  /**
   * Kills, lets runsc remove its state, and removes cgroups runsc may leave
   * behind. `runsc delete` returns only once the killed sandbox process is
   * gone: once the process that inherited it (the host's init, as runsc
   * detaches it) has reaped it. An init that reaps late makes every destroy
   * that slow (about 1.5 s on the build machine), so callers run it in the
   * background where they can.
   */
  async destroy(id: string): Promise<void> {
    await this.kill(id);
    await runsc(this.opts, ['delete', '-force', id]).catch(() => undefined);
    await this.removeCgroups(id);
  }

  private async sandboxPid(id: string): Promise<number> {
    try {
      const state = JSON.parse(await runsc(this.opts, ['state', id])) as { pid?: number };
      return state.pid ?? -1;
    } catch {
      return -1;
    }
  }

  private async removeCgroups(id: string): Promise<void> {
    const controllers = [
      'cpu',
      'cpuacct',
      'cpuset',
      'memory',
      'devices',
      'freezer',
      'blkio',
      'pids',
      'systemd',
      'unified',
    ];
    await Promise.all(
      controllers.map((c) => rmdir(join(CGROUP_ROOT, c, id)).catch(() => undefined)),
    );
  }

  /** The sandbox's cgroup: v1 cpu.cfs_quota_us, or v2 cpu.max. */
  async limitCpu(id: string, cpu: number): Promise<void> {
    const quota = cpuQuotaUs(cpu);
    await writeCpuCgroup(
      id,
      ['cpu.cfs_quota_us', String(quota)],
      ['cpu.max', `${quota} ${CPU_PERIOD_US}`],
      `cannot hold sandbox ${id} to ${cpu} CPU`,
    );
  }

  /** cgroup v1 `cpu.shares` (default 1024), or v2 `cpu.weight` (default 100). */
  async setCpuWeight(id: string, weight: CpuWeight): Promise<void> {
    const idle = weight === 'idle';
    await writeCpuCgroup(
      id,
      ['cpu.shares', idle ? IDLE_CPU_SHARES : '1024'],
      ['cpu.weight', idle ? IDLE_CPU_WEIGHT : '100'],
      `cannot set the CPU weight of sandbox ${id}`,
    );
  }

  /** From the sandbox's cgroup (v1 cpuacct, or v2 cpu.stat). */
  async cpuUsageNs(id: string): Promise<number | null> {
    try {
      return Number(await readFile(join(CGROUP_ROOT, 'cpuacct', id, 'cpuacct.usage'), 'utf8'));
    } catch {
      try {
        const stat = await readFile(join(CGROUP_ROOT, id, 'cpu.stat'), 'utf8');
        const usec = /usage_usec (\d+)/.exec(stat)?.[1];
        return usec ? Number(usec) * 1000 : null;
      } catch {
        return null;
      }
    }
  }

  /** From the sandbox's memory cgroup (v1 memory.usage_in_bytes, or v2 memory.current): page cache included. */
  async memoryBytes(id: string): Promise<number | null> {
    for (const file of [
      join(CGROUP_ROOT, 'memory', id, 'memory.usage_in_bytes'),
      join(CGROUP_ROOT, id, 'memory.current'),
    ]) {
      try {
        const n = Number((await readFile(file, 'utf8')).trim());
        if (Number.isFinite(n)) return n;
      } catch {
        // not this cgroup version
      }
    }
    return null;
  }

  /**
   * cgroup v1: memory.force_empty reclaims what the kernel can of the
   * cgroup's pages (page cache; anonymous and shared memory only to swap)
   * while its processes run on, and the soft limit goes to 0, so that under
   * host memory pressure the kernel reclaims from this sandbox first. cgroup
   * v2: memory.reclaim (Linux 5.19) with the same effect. Null when neither
   * exists.
   */
  async reclaim(id: string): Promise<number | null> {
    const before = await this.memoryBytes(id);
    if (before === null) return null;
    const v1 = join(CGROUP_ROOT, 'memory', id);
    try {
      await writeFile(join(v1, 'memory.soft_limit_in_bytes'), '0');
      await writeFile(join(v1, 'memory.force_empty'), '0');
    } catch {
      try {
        await writeFile(join(CGROUP_ROOT, id, 'memory.reclaim'), String(before));
      } catch {
        // EAGAIN when it could not reclaim all it was asked: what it did counts
      }
    }
    const after = await this.memoryBytes(id);
    return after === null ? null : Math.max(0, before - after);
  }

  /**
   * From the sandbox's memory cgroup: v1 memory.oom_control or v2
   * memory.events, `oom_kill N`. The memory limit is this cgroup's, and
   * past it the host kills the sentry (the sandbox's kernel), not a process
   * inside: the whole sandbox dies. The cgroup stays until destroy.
   */
  async oomKills(id: string): Promise<number | null> {
    for (const file of [
      join(CGROUP_ROOT, 'memory', id, 'memory.oom_control'),
      join(CGROUP_ROOT, id, 'memory.events'),
    ]) {
      try {
        const n = /^oom_kill (\d+)$/m.exec(await readFile(file, 'utf8'))?.[1];
        if (n !== undefined) return Number(n);
      } catch {
        // not this cgroup version
      }
    }
    return null;
  }

  /** Live sandboxes only, unless `all`: runsc also lists stopped ones (a checkpoint stops its sandbox). */
  async list(o: { all?: boolean } = {}): Promise<string[]> {
    const out = await runsc(this.opts, ['list', '-format', 'json']).catch(() => '[]');
    const containers = (JSON.parse(out || '[]') ?? []) as Array<{ id: string; status: string }>;
    return containers
      .filter((c) => o.all || c.status === 'running' || c.status === 'paused')
      .map((c) => c.id);
  }

  guestEndpoint(spec: Pick<SandboxSpec, 'channelDir'>): GuestEndpoint {
    return new UnixEndpoint(spec.channelDir);
  }
}
