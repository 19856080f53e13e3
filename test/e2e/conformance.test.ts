/**
 * Runtime driver conformance: every driver this machine can run goes through
 * the same checks of the RuntimeDriver contract (packages/host-agent/src/runtime/driver.ts),
 * without a HostAgent: specs are built by hand, with the base template's root
 * filesystem and the current guest bundle, and each sandbox's guest agent dials
 * a GuestChannel listening in a short temp directory.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GuestChannel, readText } from '@warren/host-agent';
import type { RuntimeDriver, SandboxSpec } from '@warren/host-agent';
import {
  GUEST_PATHS,
  WarrenError,
  type ExecEvent,
  type FileInfo,
  type GuestHealth,
} from '@warren/protocol';
import { GvisorDriver } from '../../packages/host-agent/src/runtime/gvisor/driver';
import { FakeDriver } from '../../packages/host-agent/src/runtime/fake/driver';
import { ensureGuestBundle } from '../../packages/host-agent/src/templates/guest-bundle';
import type { TemplateRecord } from '../../packages/host-agent/src/templates/catalog';
import { RUNSC, TEMPLATES_DIR } from '../fixture';

/** Names of the checks, for `skip` and `todo`. */
export type ConformanceCheck =
  | 'version'
  | 'capabilities'
  | 'boot'
  | 'network'
  | 'checkpoint'
  | 'checkpoint-unlists'
  | 'restore'
  | 'restore-isolation'
  | 'pause'
  | 'kill'
  | 'destroy';

export interface ConformanceOptions {
  /** Checks this driver is known not to satisfy, with the reason in the caller's comment. */
  skip?: ConformanceCheck[];
  /** Checks this driver is known to fail (a product bug): run and reported, but not fatal. */
  todo?: Partial<Record<ConformanceCheck, string>>;
}

interface Sbx {
  id: string;
  spec: SandboxSpec;
  channel: GuestChannel;
}

const READY_MS = 60_000;
/** A driver operation that hangs is a failure, not a stuck run. */
const DESTROY_MS = 10_000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]);
}

export function runConformance(
  name: string,
  makeDriver: (dirs: { stateDir: string }) => RuntimeDriver,
  opts: ConformanceOptions = {},
): void {
  const skip = new Set(opts.skip ?? []);
  const check = (c: ConformanceCheck) => {
    if (skip.has(c)) return { skip: `${name} skips ${c}` };
    const todo = opts.todo?.[c];
    return todo ? { todo } : {};
  };

  describe(`runtime driver conformance: ${name}`, () => {
    let tmp = '';
    let driver: RuntimeDriver;
    let rootfs = '';
    let guestDir = '';
    let imageDir = '';
    const prefix = `c${randomBytes(3).toString('hex')}`;
    const live = new Map<string, Sbx>();
    let booted: Sbx | undefined;
    let checkpointed = '';
    let killed = '';
    let copies: Sbx[] = [];

    const makeSbx = async (suffix: string): Promise<Sbx> => {
      const id = `${prefix}-${suffix}`;
      const workDir = join(tmp, id);
      const channelDir = join(workDir, 'chan');
      await mkdir(channelDir, { recursive: true });
      const channel = new GuestChannel(join(channelDir, 'agent.sock'), () => ({
        sandbox_id: id,
        env: {},
      }));
      await channel.listen();
      const spec: SandboxSpec = {
        id,
        rootfs,
        guestDir,
        channelDir,
        workDir,
        cpu: 1,
        memoryMb: 512,
        hostname: id,
        env: {},
      };
      const sbx = { id, spec, channel };
      live.set(id, sbx);
      return sbx;
    };

    const health = (sbx: Sbx) =>
      sbx.channel.json<GuestHealth>({ method: 'GET', path: GUEST_PATHS.health });
    const putFile = (sbx: Sbx, path: string, content: string) =>
      sbx.channel.upload(path, Readable.from([Buffer.from(content)]));
    const statFile = (sbx: Sbx, path: string) =>
      sbx.channel.json<FileInfo>({ method: 'GET', path: GUEST_PATHS.filesStat, query: { path } });
    const readFile = async (sbx: Sbx, path: string) => {
      const { stream } = await sbx.channel.download(path);
      const chunks: Buffer[] = [];
      for await (const c of stream) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    };

    /** Runs a command in the guest (a foreground process: its events stream back). */
    const run = async (sbx: Sbx, cmd: string, args: string[]) => {
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
    };

    /** A path under our temp dir: inside gVisor it is in the sandbox's own overlay; the fake writes the host. */
    const guestPath = (name: string) => join(tmp, 'guest-files', name);

    before(async () => {
      // Short paths: Unix socket paths must stay under ~100 bytes.
      tmp = mkdtempSync('/tmp/wc-');
      imageDir = join(tmp, 'image');
      const tpl = JSON.parse(
        readFileSync(join(TEMPLATES_DIR, 'base', 'template.json'), 'utf8'),
      ) as TemplateRecord;
      rootfs = tpl.rootfs;
      guestDir = (await ensureGuestBundle(join(TEMPLATES_DIR, '.guest'))).dir;
      driver = makeDriver({ stateDir: join(tmp, 'state') });
    });

    after(async () => {
      // Everything, even after a failure: sandboxes, channels, temp dirs.
      const ids = new Set([...live.keys()]);
      for (const id of (await driver?.list().catch(() => [] as string[])) ?? []) {
        if (id.startsWith(prefix)) ids.add(id);
      }
      for (const sbx of live.values()) await sbx.channel.close().catch(() => undefined);
      for (const id of ids) {
        await withTimeout(driver.destroy(id), DESTROY_MS, `cleanup destroy(${id})`).catch(
          () => undefined,
        );
      }
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });

    it('version() returns a non-empty string', check('version'), async () => {
      const v = await driver.version();
      assert.equal(typeof v, 'string');
      assert.ok(v.trim().length > 0, `version ${JSON.stringify(v)}`);
    });

    it('name and capabilities have the documented shape', check('capabilities'), () => {
      assert.equal(typeof driver.name, 'string');
      assert.ok(driver.name.length > 0);
      const caps = driver.capabilities;
      assert.deepEqual(Object.keys(caps).sort(), ['checkpoint', 'diskLimit', 'network', 'pause']);
      assert.equal(typeof caps.diskLimit, 'boolean');
      assert.equal(typeof caps.checkpoint, 'boolean');
      assert.equal(typeof caps.pause, 'boolean');
      assert.ok(['none', 'netstack'].includes(caps.network), `network ${caps.network}`);
    });

    it(
      'boot: the guest dials its channel and answers /health; list() has it',
      check('boot'),
      async () => {
        const sbx = await makeSbx('boot');
        await driver.boot(sbx.spec);
        await sbx.channel.waitReady(READY_MS);
        const h = await health(sbx);
        assert.equal(h.ok, true);
        assert.equal(h.sandbox_id, sbx.id, 'the guest accepted the hello of its own channel');
        assert.equal(h.connections, 1);
        assert.ok((await driver.list()).includes(sbx.id));
        // State written before the checkpoint, to be found in every restored copy.
        await putFile(sbx, guestPath('before-checkpoint'), 'from the booted sandbox');
        booted = sbx;
      },
    );

    it(
      'network capability: "none" means the guest sees only loopback',
      check('network'),
      async (t) => {
        assert.ok(booted, 'needs the booted sandbox');
        if (driver.capabilities.network !== 'none') return t.skip('driver provides a network');
        const r = await run(booted, 'cat', ['/proc/net/dev']);
        assert.equal(r.exitCode, 0);
        const interfaces = r.stdout
          .split('\n')
          .slice(2)
          .map((l) => l.split(':')[0]!.trim())
          .filter(Boolean);
        assert.deepEqual(
          interfaces.filter((i) => i !== 'lo'),
          [],
          r.stdout,
        );
      },
    );

    it('checkpoint: saves an image and stops the sandbox', check('checkpoint'), async (t) => {
      assert.ok(booted, 'needs the booted sandbox');
      if (!driver.capabilities.checkpoint) return t.skip('driver cannot checkpoint');
      // As HostAgent.bake does: no new dial-ins, then the guest drops its connection.
      await booted.channel.closeListener();
      await booted.channel.json({ method: 'POST', path: GUEST_PATHS.prepareCheckpoint });
      await booted.channel.waitDisconnected(10_000);
      await driver.checkpoint(booted.id, imageDir);
      checkpointed = booted.id;
      assert.ok(existsSync(imageDir) && readdirSync(imageDir).length > 0, 'image written');
      assert.equal(booted.channel.connected, false);
      await assert.rejects(health(booted), (e: unknown) => e instanceof WarrenError);
    });

    it(
      'checkpoint: the checkpointed sandbox leaves list()',
      check('checkpoint-unlists'),
      async () => {
        assert.ok(checkpointed, 'needs the checkpointed sandbox');
        const listed = await driver.list();
        assert.ok(!listed.includes(checkpointed), `list() after checkpoint: ${listed.join(',')}`);
      },
    );

    it(
      'restore twice: two running copies, each dialing its own channel',
      check('restore'),
      async (t) => {
        if (!driver.capabilities.checkpoint) return t.skip('driver cannot checkpoint');
        assert.ok(existsSync(imageDir), 'needs the checkpoint image');
        const a = await makeSbx('ra');
        const b = await makeSbx('rb');
        await driver.restore(a.spec, imageDir);
        await driver.restore(b.spec, imageDir);
        copies = [a, b];
        await Promise.all([a.channel.waitReady(READY_MS), b.channel.waitReady(READY_MS)]);
        const [ha, hb] = await Promise.all([health(a), health(b)]);
        assert.equal(ha.sandbox_id, a.id);
        assert.equal(hb.sandbox_id, b.id);
        const listed = await driver.list();
        assert.ok(listed.includes(a.id) && listed.includes(b.id), `list(): ${listed.join(',')}`);
      },
    );

    it(
      'restored copies carry the image state and are independent',
      check('restore-isolation'),
      async () => {
        const [a, b] = copies;
        assert.ok(a && b, 'needs two restored copies');
        // Both copies start from the image...
        assert.equal(await readFile(a, guestPath('before-checkpoint')), 'from the booted sandbox');
        assert.equal(await readFile(b, guestPath('before-checkpoint')), 'from the booted sandbox');
        // ...and diverge from there.
        const written = await putFile(a, guestPath('only-in-a'), 'a');
        assert.equal(written.size, 1);
        assert.equal((await statFile(a, guestPath('only-in-a'))).type, 'file');
        await assert.rejects(
          statFile(b, guestPath('only-in-a')),
          (e: unknown) => e instanceof WarrenError && e.code === 'FILE_NOT_FOUND',
        );
      },
    );

    it('pause holds guest requests; resume lets them complete', check('pause'), async (t) => {
      if (!driver.capabilities.pause) return t.skip('driver cannot pause');
      const sbx = copies[0];
      assert.ok(sbx, 'needs a running sandbox');
      await health(sbx); // answers while running
      await driver.pause(sbx.id);
      let settled = false;
      const pending = health(sbx).finally(() => (settled = true));
      try {
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(settled, false, 'a request to a paused sandbox completed');
      } finally {
        await driver.resume(sbx.id);
      }
      const h = await withTimeout(pending, 10_000, 'request after resume');
      assert.equal(h.sandbox_id, sbx.id);
    });

    it(
      'kill stops every process at once; destroy still works after it',
      check('kill'),
      async () => {
        const sbx = copies[1];
        assert.ok(sbx, 'needs a running sandbox');
        await health(sbx);
        await driver.kill(sbx.id);
        killed = sbx.id;
        await sbx.channel.waitDisconnected(5_000);
        // Nothing of it runs any more: it does not dial in again.
        await assert.rejects(sbx.channel.waitReady(500), (e: unknown) => e instanceof WarrenError);
        await driver.kill(sbx.id); // repeating it is harmless
        // Removal may follow later: destroy of a killed sandbox completes and unlists it.
        await withTimeout(driver.destroy(sbx.id), DESTROY_MS, `destroy(${sbx.id}) after kill`);
        assert.ok(!(await driver.list()).includes(sbx.id), `${sbx.id} still listed`);
      },
    );

    it('destroy is idempotent and removes the sandbox from list()', check('destroy'), async () => {
      // The running copy, and the checkpointed one (HostAgent.bake destroys it too).
      const victims = copies.filter((c) => c.id !== killed);
      if (victims.length === 0) {
        // Restore was skipped: destroy a freshly booted one instead.
        const sbx = await makeSbx('d');
        await driver.boot(sbx.spec);
        await sbx.channel.waitReady(READY_MS);
        victims.push(sbx);
      }
      const ids = [...victims.map((v) => v.id), ...(checkpointed ? [checkpointed] : [])];
      for (const id of ids) {
        await withTimeout(driver.destroy(id), DESTROY_MS, `destroy(${id})`);
        await withTimeout(driver.destroy(id), DESTROY_MS, `second destroy(${id})`);
        assert.ok(!(await driver.list()).includes(id), `${id} still listed`);
      }
      for (const sbx of victims) {
        await sbx.channel.waitDisconnected(10_000);
        assert.equal(sbx.channel.connected, false);
      }
      await withTimeout(driver.destroy(`${prefix}-never-existed`), DESTROY_MS, 'destroy(unknown)');
      const left = await driver.list();
      assert.deepEqual(
        left.filter((id) => ids.includes(id)),
        [],
        'nothing destroyed here is left',
      );
    });
  });
}

const canRunGvisor = process.getuid?.() === 0 && existsSync(RUNSC);

if (canRunGvisor) {
  runConformance('gvisor', ({ stateDir }) => new GvisorDriver({ binary: RUNSC, stateDir }));
} else {
  describe('runtime driver conformance: gvisor', () => {
    it('needs root and .state/bin/runsc', { skip: 'runsc not available here' }, () => undefined);
  });
}

// The fake runs the guest agent as a host process sharing the host's file system
// and network, so restored copies cannot be isolated from each other (nor carry
// image state), and its `network: 'none'` is not enforced.
runConformance('fake', () => new FakeDriver(), {
  skip: ['restore-isolation', 'network'],
});
