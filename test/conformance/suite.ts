/**
 * Runtime driver conformance: the checks of the RuntimeDriver contract
 * (packages/host-agent/src/runtime/driver.ts) that every driver must pass,
 * without a host agent. Specs are built by hand, with the base template's root
 * filesystem and the current guest bundle, and each sandbox's guest agent
 * dials a guest channel of the test.
 *
 * Each check stands alone: it gets its own driver (with its own state
 * directory), its own directory and sandbox ids, sets up what it needs (a
 * booted sandbox, a checkpoint image, restored copies) and removes all of it
 * at its end, whatever the outcome. No check depends on another having run.
 * Host-agent internals are reached only through ./sandboxes.ts.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { WarrenError } from '@warren/protocol';
import { waitFor, waitUntil, withDeadline } from '../wait';
import {
  CheckScope,
  DESTROY_MS,
  READY_MS,
  health,
  prepareInputs,
  putFile,
  readFile,
  run,
  statFile,
  type DriverName,
  type Inputs,
  type Sbx,
} from './sandboxes';

export { gvisorUnavailable } from './sandboxes';

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
  /** Why this machine cannot run the driver at all (every check is then skipped). */
  unavailable?: string;
}

/**
 * Registers the conformance checks for the driver `name` (as createDriver()
 * makes it), each as its own test.
 */
export function runConformance(name: DriverName, opts: ConformanceOptions = {}): void {
  const skip = new Set(opts.skip ?? []);
  const options = (c: ConformanceCheck) => {
    if (opts.unavailable) return { skip: opts.unavailable };
    if (skip.has(c)) return { skip: `${name} skips ${c}` };
    const todo = opts.todo?.[c];
    return todo ? { todo } : {};
  };

  describe(`runtime driver conformance: ${name}`, () => {
    let inputs: Inputs | undefined;

    before(async () => {
      if (!opts.unavailable) inputs = await prepareInputs();
    });

    after(() => {
      if (inputs) rmSync(inputs.root, { recursive: true, force: true });
    });

    /** A check that runs in its own scope, removed at its end even when it fails. */
    const check =
      (tag: string, body: (s: CheckScope, t: TestContext) => Promise<void> | void) =>
      async (t: TestContext) => {
        assert.ok(inputs, 'the suite inputs were prepared');
        const scope = CheckScope.open(inputs, name, tag);
        let failed = true;
        try {
          await body(scope, t);
          failed = false;
        } finally {
          // A cleanup failure fails a passing check; it never hides the failure of a failing one.
          await scope.close().catch((err: unknown) => {
            if (!failed) throw err;
            t.diagnostic(`cleanup after the failure: ${String(err)}`);
          });
        }
      };

    it(
      'version() returns a non-empty string',
      options('version'),
      check('ver', async ({ driver }) => {
        const v = await driver.version();
        assert.equal(typeof v, 'string');
        assert.ok(v.trim().length > 0, `version ${JSON.stringify(v)}`);
      }),
    );

    it(
      'name and capabilities have the documented shape',
      options('capabilities'),
      check('caps', ({ driver }) => {
        assert.equal(typeof driver.name, 'string');
        assert.ok(driver.name.length > 0);
        const caps = driver.capabilities;
        assert.deepEqual(Object.keys(caps).sort(), [
          'checkpoint',
          'diskLimit',
          'egress',
          'network',
          'pause',
        ]);
        assert.equal(typeof caps.diskLimit, 'boolean');
        assert.equal(typeof caps.egress, 'boolean');
        assert.equal(typeof caps.checkpoint, 'boolean');
        assert.equal(typeof caps.pause, 'boolean');
        assert.ok(['none', 'netstack'].includes(caps.network), `network ${caps.network}`);
      }),
    );

    it(
      'boot: the guest dials its channel and answers /health; list() has it',
      options('boot'),
      check('boot', async (s) => {
        const sbx = await s.sandbox('b');
        await s.driver.boot(sbx.spec);
        await sbx.channel.waitReady(READY_MS);
        const h = await health(sbx);
        assert.equal(h.ok, true);
        assert.equal(h.sandbox_id, sbx.id, 'the guest accepted the hello of its own channel');
        assert.equal(h.connections, 1);
        assert.ok((await s.driver.list()).includes(sbx.id));
      }),
    );

    it(
      'network capability: "none" means the guest sees only loopback',
      options('network'),
      check('net', async (s, t) => {
        if (s.driver.capabilities.network !== 'none') return t.skip('driver provides a network');
        const sbx = await s.booted('n');
        const r = await run(sbx, 'cat', ['/proc/net/dev']);
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
      }),
    );

    it(
      'checkpoint: saves an image and stops the sandbox',
      options('checkpoint'),
      check('ckpt', async (s, t) => {
        if (!s.driver.capabilities.checkpoint) return t.skip('driver cannot checkpoint');
        const { source, imageDir } = await s.checkpointed();
        assert.ok(existsSync(imageDir) && readdirSync(imageDir).length > 0, 'image written');
        assert.equal(source.channel.connected, false);
        await assert.rejects(health(source), (e: unknown) => e instanceof WarrenError);
      }),
    );

    it(
      'checkpoint: the checkpointed sandbox leaves list()',
      options('checkpoint-unlists'),
      check('unlist', async (s, t) => {
        if (!s.driver.capabilities.checkpoint) return t.skip('driver cannot checkpoint');
        const { source } = await s.checkpointed();
        // runsc records a checkpointed sandbox as stopped about 2 s after the checkpoint
        // returns (see GvisorDriver.checkpoint): it must be gone within the deadline.
        let listed: string[] = [];
        await waitFor(async () => !(listed = await s.driver.list()).includes(source.id), {
          what: () => `${source.id} to leave list() after its checkpoint: ${listed.join(',')}`,
          timeoutMs: 10_000,
          intervalMs: 200,
        });
      }),
    );

    it(
      'restore twice: two running copies, each dialing its own channel',
      options('restore'),
      check('rest', async (s, t) => {
        if (!s.driver.capabilities.checkpoint) return t.skip('driver cannot checkpoint');
        const [a, b] = await s.restoredPair();
        const [ha, hb] = await Promise.all([health(a), health(b)]);
        assert.equal(ha.sandbox_id, a.id);
        assert.equal(hb.sandbox_id, b.id);
        const listed = await s.driver.list();
        assert.ok(listed.includes(a.id) && listed.includes(b.id), `list(): ${listed.join(',')}`);
        // A restore runs without its CPU quota until the caller sets it; a sandbox not running
        // cannot be held to one.
        await s.driver.limitCpu(a.id, 0.5);
        assert.equal((await health(a)).sandbox_id, a.id);
        await assert.rejects(
          s.driver.limitCpu(s.unusedId(), 1),
          (e: unknown) => e instanceof WarrenError && e.code === 'RUNTIME_ERROR',
        );
        // An idle sandbox's CPU weight, and back: it answers with either.
        await s.driver.setCpuWeight(a.id, 'idle');
        assert.equal((await health(a)).sandbox_id, a.id);
        await s.driver.setCpuWeight(a.id, 'normal');
        await assert.rejects(
          s.driver.setCpuWeight(s.unusedId(), 'idle'),
          (e: unknown) => e instanceof WarrenError && e.code === 'RUNTIME_ERROR',
        );
      }),
    );

    it(
      'restored copies carry the image state and are independent',
      options('restore-isolation'),
      check('iso', async (s, t) => {
        if (!s.driver.capabilities.checkpoint) return t.skip('driver cannot checkpoint');
        const [a, b] = await s.restoredPair();
        // Both copies start from the image...
        const written = s.guestPath('before-checkpoint');
        assert.equal(await readFile(a, written), 'from the booted sandbox');
        assert.equal(await readFile(b, written), 'from the booted sandbox');
        // ...and diverge from there.
        const put = await putFile(a, s.guestPath('only-in-a'), 'a');
        assert.equal(put.size, 1);
        assert.equal((await statFile(a, s.guestPath('only-in-a'))).type, 'file');
        await assert.rejects(
          statFile(b, s.guestPath('only-in-a')),
          (e: unknown) => e instanceof WarrenError && e.code === 'FILE_NOT_FOUND',
        );
      }),
    );

    it(
      'pause holds guest requests; resume lets them complete',
      options('pause'),
      check('pause', async (s, t) => {
        if (!s.driver.capabilities.pause) return t.skip('driver cannot pause');
        const sbx = await s.booted('p');
        // Answers while running; how long that takes sets how long "held" must last.
        const asked = Date.now();
        await health(sbx);
        const answerMs = Date.now() - asked;
        await s.driver.pause(sbx.id);
        const pausedAt = Date.now();
        let settled = false;
        const pending = health(sbx).finally(() => (settled = true));
        try {
          // Unanswered for far longer than a running guest needs (and at least 300 ms).
          await waitUntil(
            pausedAt + Math.max(300, 20 * answerMs),
            'the request to be held for 20 answer times',
          );
          assert.equal(settled, false, 'a request to a paused sandbox completed');
        } finally {
          await s.driver.resume(sbx.id);
        }
        const h = await withDeadline(pending, 10_000, 'request after resume');
        assert.equal(h.sandbox_id, sbx.id);
      }),
    );

    it(
      'kill stops every process at once; destroy still works after it',
      options('kill'),
      check('kill', async (s) => {
        const sbx = await s.booted('k');
        await health(sbx);
        await s.driver.kill(sbx.id);
        await sbx.channel.waitDisconnected(5_000);
        // Nothing of it runs any more: it does not dial in again.
        await assert.rejects(sbx.channel.waitReady(500), (e: unknown) => e instanceof WarrenError);
        await s.driver.kill(sbx.id); // repeating it is harmless
        // Removal may follow later: destroy of a killed sandbox completes and unlists it.
        await withDeadline(s.driver.destroy(sbx.id), DESTROY_MS, `destroy(${sbx.id}) after kill`);
        assert.ok(!(await s.driver.list()).includes(sbx.id), `${sbx.id} still listed`);
      }),
    );

    it(
      'destroy is idempotent and removes the sandbox from list()',
      options('destroy'),
      check('dstr', async (s) => {
        // A running sandbox (restored, where the driver can), and the checkpointed one it
        // came from (HostAgent.bake destroys that too).
        let running: Sbx;
        const ids: string[] = [];
        if (s.driver.capabilities.checkpoint) {
          const { source, imageDir } = await s.checkpointed();
          running = await s.sandbox('d');
          await s.driver.restore(running.spec, imageDir);
          await running.channel.waitReady(READY_MS);
          ids.push(running.id, source.id);
        } else {
          running = await s.booted('d');
          ids.push(running.id);
        }
        for (const id of ids) {
          await withDeadline(s.driver.destroy(id), DESTROY_MS, `destroy(${id})`);
          await withDeadline(s.driver.destroy(id), DESTROY_MS, `second destroy(${id})`);
          assert.ok(!(await s.driver.list()).includes(id), `${id} still listed`);
        }
        await running.channel.waitDisconnected(10_000);
        assert.equal(running.channel.connected, false);
        const never = s.unusedId();
        await withDeadline(s.driver.destroy(never), DESTROY_MS, 'destroy(unknown)');
        const left = await s.driver.list();
        assert.deepEqual(
          left.filter((id) => ids.includes(id)),
          [],
          'nothing destroyed here is left',
        );
      }),
    );
  });
}
