/**
 * What the conformance checks (./suite.ts) run on: one check's own scope (a
 * driver, a directory, its sandboxes, each with a guest channel) and small
 * helpers that talk to a guest agent.
 *
 * This is the one test module that reaches into the host agent's internals
 * (the guest channel, the guest bundle, the driver factory): a change of the
 * driver interface is adapted here, not in the checks or the driver files.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GUEST_PATHS, type ExecEvent, type FileInfo, type GuestHealth } from '@warren/protocol';
import { GuestChannel } from '../../packages/host-agent/src/guest/channel';
import { readText } from '../../packages/host-agent/src/guest/wire';
import { createDriver, type DriverName } from '../../packages/host-agent/src/runtime';
import type { RuntimeDriver, SandboxSpec } from '../../packages/host-agent/src/runtime/driver';
import type { TemplateRecord } from '../../packages/host-agent/src/templates/catalog';
import { ensureGuestBundle } from '../../packages/host-agent/src/templates/guest-bundle';
import { RUNSC, TEMPLATES_DIR } from '../fixture';
import { withDeadline } from '../wait';

export type { DriverName, RuntimeDriver };

/** Whether this machine can run the gVisor driver: root, and the runsc that setup installs. */
export function gvisorUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root';
  if (!existsSync(RUNSC)) return 'needs .state/bin/runsc (scripts/setup.sh)';
  return undefined;
}

export interface Sbx {
  id: string;
  spec: SandboxSpec;
  channel: GuestChannel;
}

export const READY_MS = 60_000;
/** A driver operation that hangs is a failure, not a stuck run. */
export const DESTROY_MS = 10_000;

/** What every check reads and nobody writes: the base root filesystem and the guest bundle. */
export interface Inputs {
  /** A short temp directory (Unix socket paths must stay under ~100 bytes). */
  root: string;
  rootfs: string;
  guestDir: string;
}

/** Reads the inputs every check shares: the base template's root and the current guest bundle. */
export async function prepareInputs(): Promise<Inputs> {
  const root = mkdtempSync('/tmp/wc-');
  try {
    const tpl = JSON.parse(
      readFileSync(join(TEMPLATES_DIR, 'base', 'template.json'), 'utf8'),
    ) as TemplateRecord;
    const guestDir = (await ensureGuestBundle(join(TEMPLATES_DIR, '.guest'))).dir;
    return { root, rootfs: tpl.rootfs, guestDir };
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
}

export const health = (sbx: Sbx) =>
  sbx.channel.json<GuestHealth>({ method: 'GET', path: GUEST_PATHS.health });
export const putFile = (sbx: Sbx, path: string, content: string) =>
  sbx.channel.upload(path, Readable.from([Buffer.from(content)]));
export const statFile = (sbx: Sbx, path: string) =>
  sbx.channel.json<FileInfo>({ method: 'GET', path: GUEST_PATHS.filesStat, query: { path } });
export async function readFile(sbx: Sbx, path: string): Promise<string> {
  const { stream } = await sbx.channel.download(path);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Runs a command in the guest (a foreground process: its events stream back). */
export async function run(sbx: Sbx, cmd: string, args: string[]) {
  const res = await sbx.channel.request({
    method: 'POST',
    path: GUEST_PATHS.processes,
    json: { cmd, args },
  });
  const text = await readText(res.body);
  assert.equal(res.status, 200, text);
  let stdout = '';
  let exitCode: number | null = null;
  for (const line of text.split('\n').filter(Boolean)) {
    const event = JSON.parse(line) as ExecEvent;
    if (event.type === 'stdout') stdout += event.data;
    if (event.type === 'exit') exitCode = event.exit_code;
  }
  return { stdout, exitCode };
}

/** One check's own world: a driver, a directory, and the sandboxes it made there. */
export class CheckScope {
  readonly sandboxes = new Map<string, Sbx>();
  /** Ids handed to the driver without a channel of ours (checkpointed, never existed). */
  private readonly extraIds = new Set<string>();

  private constructor(
    private readonly inputs: Inputs,
    readonly prefix: string,
    readonly dir: string,
    readonly driver: RuntimeDriver,
  ) {}

  static open(inputs: Inputs, name: DriverName, tag: string): CheckScope {
    const dir = mkdtempSync(join(inputs.root, `${tag}-`));
    const driver = createDriver(name, { runsc: RUNSC, stateDir: join(dir, 'state') });
    return new CheckScope(inputs, `c${randomBytes(3).toString('hex')}-${tag}`, dir, driver);
  }

  /**
   * A path for files the guest writes: inside gVisor it is in the sandbox's own
   * overlay; the fake writes the host, in this check's directory.
   */
  guestPath(name: string): string {
    return join(this.dir, 'guest-files', name);
  }

  /** A sandbox id of this check that no driver call ever created. */
  unusedId(): string {
    const id = `${this.prefix}-none`;
    this.extraIds.add(id);
    return id;
  }

  /** A spec and a listening channel for a new sandbox of this check (not started). */
  async sandbox(suffix: string): Promise<Sbx> {
    const id = `${this.prefix}-${suffix}`;
    const workDir = join(this.dir, suffix);
    const channelDir = join(workDir, 'chan');
    await mkdir(channelDir, { recursive: true });
    const channel = new GuestChannel(this.driver.guestEndpoint({ channelDir }), () => ({
      sandbox_id: id,
      env: {},
    }));
    await channel.listen();
    const spec: SandboxSpec = {
      id,
      rootfs: this.inputs.rootfs,
      guestDir: this.inputs.guestDir,
      channelDir,
      workDir,
      cpu: 1,
      memoryMb: 512,
      hostname: id,
      env: {},
    };
    const sbx = { id, spec, channel };
    this.sandboxes.set(id, sbx);
    return sbx;
  }

  /** A cold-booted sandbox whose guest agent answers. */
  async booted(suffix: string): Promise<Sbx> {
    const sbx = await this.sandbox(suffix);
    await this.driver.boot(sbx.spec);
    await sbx.channel.waitReady(READY_MS);
    return sbx;
  }

  /**
   * A booted sandbox with `before-checkpoint` written, checkpointed into this
   * check's image directory as templates/bake.ts does it: no new dial-ins,
   * then the guest drops its connection.
   */
  async checkpointed(): Promise<{ source: Sbx; imageDir: string }> {
    const source = await this.booted('src');
    await putFile(source, this.guestPath('before-checkpoint'), 'from the booted sandbox');
    const imageDir = join(this.dir, 'image');
    await source.channel.prepareCheckpoint();
    await this.driver.checkpoint(source.id, imageDir);
    return { source, imageDir };
  }

  /** Two copies restored from one checkpoint, each ready on its own channel. */
  async restoredPair(): Promise<[Sbx, Sbx]> {
    const { imageDir } = await this.checkpointed();
    const a = await this.sandbox('ra');
    const b = await this.sandbox('rb');
    await this.driver.restore(a.spec, imageDir);
    await this.driver.restore(b.spec, imageDir);
    await Promise.all([a.channel.waitReady(READY_MS), b.channel.waitReady(READY_MS)]);
    return [a, b];
  }

  /**
   * Removes everything this check made: channels, sandboxes (each destroy with
   * a deadline), the directory. Throws if the driver still lists one of them.
   */
  async close(): Promise<void> {
    const ids = new Set([...this.sandboxes.keys(), ...this.extraIds]);
    const listed = await this.driver.list().catch(() => [] as string[]);
    for (const id of listed) if (id.startsWith(this.prefix)) ids.add(id);
    for (const sbx of this.sandboxes.values()) await sbx.channel.close().catch(() => undefined);
    const failures: string[] = [];
    for (const id of ids) {
      await withDeadline(this.driver.destroy(id), DESTROY_MS, `cleanup destroy(${id})`).catch(
        (err: unknown) => failures.push(String(err)),
      );
    }
    const left = (await this.driver.list().catch(() => [] as string[])).filter((id) =>
      id.startsWith(this.prefix),
    );
    rmSync(this.dir, { recursive: true, force: true });
    if (failures.length > 0 || left.length > 0)
      throw new Error(
        `cleanup left ${left.join(', ') || 'nothing listed'}: ${failures.join('; ')}`,
      );
  }
}
