/**
 * A fake driver for unit tests of scheduling and lifecycle logic only. It
 * runs the guest agent as an ordinary host process (no isolation at all), so
 * it must never back a feature test or a real deployment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GUEST_CHANNEL_SOCKET, GUEST_DATA_SOCKET, WarrenError } from '@warren/protocol';
import type {
  CpuWeight,
  DriverCapabilities,
  GuestEndpoint,
  RuntimeDriver,
  SandboxSpec,
} from '../driver';
import { UnixEndpoint } from '../unix-endpoint';

const AGENT_ENTRY = fileURLToPath(new URL('../../../../guest-agent/src/main.ts', import.meta.url));

type Operation = 'boot' | 'restore' | 'limitCpu' | 'checkpoint' | 'destroy';

export class FakeDriver implements RuntimeDriver {
  readonly name = 'fake';
  readonly capabilities: DriverCapabilities = {
    checkpoint: true,
    pause: true,
    network: 'none',
    diskLimit: false,
    egress: false,
  };
  readonly calls: Array<{ op: string; id: string }> = [];
  /** The CPU limit each sandbox was last held to (limitCpu). */
  readonly cpuLimits = new Map<string, number>();
  private readonly running = new Map<string, ChildProcess>();
  private readonly failures = new Map<Operation, string>();

  /** Makes the next call of `op` fail with RUNTIME_ERROR. */
  failNext(op: Operation, message = `injected ${op} failure`): void {
    this.failures.set(op, message);
  }

  private check(op: Operation, id: string): void {
    this.calls.push({ op, id });
    const message = this.failures.get(op);
    if (message) {
      this.failures.delete(op);
      throw new WarrenError('RUNTIME_ERROR', message);
    }
  }

  async version(): Promise<string> {
    return 'fake-1';
  }

  private start(spec: SandboxSpec): void {
    const child = spawn(process.execPath, ['--import', 'tsx', AGENT_ENTRY], {
      env: {
        ...process.env,
        ...spec.env,
        WARREN_CHANNEL: join(spec.channelDir, GUEST_CHANNEL_SOCKET),
        WARREN_DATA_CHANNEL: join(spec.channelDir, GUEST_DATA_SOCKET),
      },
      stdio: 'ignore',
    });
    this.running.set(spec.id, child);
  }

  async boot(spec: SandboxSpec): Promise<void> {
    this.check('boot', spec.id);
    this.start(spec);
  }

  async restore(spec: SandboxSpec, imageDir: string): Promise<void> {
    this.check('restore', spec.id);
    void imageDir;
    this.start(spec);
  }

  /** The weight each sandbox was last given (unit tests read it). */
  readonly cpuWeights = new Map<string, CpuWeight>();

  async setCpuWeight(id: string, weight: CpuWeight): Promise<void> {
    if (!this.running.has(id)) throw new WarrenError('RUNTIME_ERROR', `no sandbox ${id} running`);
    this.cpuWeights.set(id, weight);
  }

  async limitCpu(id: string, cpu: number): Promise<void> {
    this.check('limitCpu', id);
    if (!this.running.has(id)) throw new WarrenError('RUNTIME_ERROR', `no sandbox ${id} running`);
    this.cpuLimits.set(id, cpu);
  }

  async checkpoint(
    id: string,
    imageDir: string,
    opts: { leaveRunning?: boolean } = {},
  ): Promise<void> {
    this.check('checkpoint', id);
    await mkdir(imageDir, { recursive: true });
    await writeFile(join(imageDir, 'fake.img'), id);
    if (!opts.leaveRunning) await this.destroy(id);
  }

  async pause(id: string): Promise<void> {
    this.running.get(id)?.kill('SIGSTOP');
  }

  async resume(id: string): Promise<void> {
    this.running.get(id)?.kill('SIGCONT');
  }

  async kill(id: string): Promise<void> {
    this.running.get(id)?.kill('SIGKILL');
  }

  async destroy(id: string): Promise<void> {
    this.calls.push({ op: 'destroy', id });
    const child = this.running.get(id);
    this.running.delete(id);
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
  }

  async cpuUsageNs(id: string): Promise<number | null> {
    return this.running.has(id) ? 0 : null;
  }

  /** The guest agent process's resident memory (VmRSS), read from /proc. */
  async memoryBytes(id: string): Promise<number | null> {
    const pid = this.running.get(id)?.pid;
    if (pid === undefined) return null;
    try {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
      return kb ? Number(kb) * 1024 : null;
    } catch {
      return null;
    }
  }

  /** Fake sandboxes are plain host processes: nothing to reclaim through a cgroup. */
  async reclaim(): Promise<number | null> {
    return null;
  }

  /** Fake sandboxes are plain host processes without a memory cgroup of their own. */
  async oomKills(): Promise<number | null> {
    return null;
  }

  async list(): Promise<string[]> {
    return [...this.running.keys()];
  }

  guestEndpoint(spec: Pick<SandboxSpec, 'channelDir'>): GuestEndpoint {
    return new UnixEndpoint(spec.channelDir);
  }
}
