/** The direct side of `npm run bench`: the same runsc, flags and template image Warren uses. */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { GvisorDriver } from '../packages/host-agent/src/runtime/gvisor/driver';
import { RUNSC, type TestPlatform } from '../test/fixture';
import { now } from './stats';

/** The same runsc, flags and template image that Warren uses, driven by hand. */
export class Direct {
  private n = 0;
  readonly root: string;
  readonly driver: GvisorDriver;
  constructor(readonly dir: string) {
    this.root = join(dir, 'runsc');
    this.driver = new GvisorDriver({ binary: RUNSC, stateDir: this.root });
  }
  /**
   * Runs runsc with `input` piped to its stdin; with `readOutput` the bench
   * reads its stdout to the end, as it reads a download from Warren (otherwise
   * stdout is /dev/null, where the sandbox's writes go nowhere).
   */
  runsc(args: string[], input?: Readable, readOutput = false): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(RUNSC, ['--root', this.root, '--network=none', ...args], {
        stdio: [input ? 'pipe' : 'ignore', readOutput ? 'pipe' : 'ignore', 'pipe'],
      });
      if (input && child.stdin) input.pipe(child.stdin);
      child.stdout?.on('data', () => undefined);
      let err = '';
      child.stderr?.on('data', (d) => (err += d));
      child.once('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`runsc ${args[0]}: ${err.slice(-300)}`)),
      );
    });
  }
  /** runsc restore of the template image, then runsc exec of `true`: a command has run. */
  async restoreAndExec(
    p: TestPlatform,
    image?: string,
    template = 'base',
  ): Promise<[number, string]> {
    const t = await p.host.templateRecord(template);
    const guest = join(p.context.config.templatesDir, '.guest', t.guest_key);
    const id = `direct-${process.pid}-${this.n++}`;
    const workDir = join(this.dir, id);
    mkdirSync(join(workDir, 'chan'), { recursive: true });
    // The template image has a file-backed overlay and the volumes mount: a restore needs both.
    mkdirSync(join(workDir, 'overlay'));
    mkdirSync(join(workDir, 'volumes'));
    const spec = {
      id,
      rootfs: t.rootfs,
      guestDir: guest,
      channelDir: join(workDir, 'chan'),
      workDir,
      cpu: 1,
      memoryMb: 512,
      hostname: id,
      env: {},
      filestoreDir: join(workDir, 'overlay'),
      volumesDir: join(workDir, 'volumes'),
    };
    const started = now();
    // The driver restores without a CPU quota, as Warren's creates do; the direct side stays
    // unlimited through its exec too (Warren holds its sandbox to `cpu` before the first exec).
    await this.driver.restore(spec, image ?? t.snapshot);
    await this.runsc(['exec', id, 'true']);
    return [now() - started, id];
  }
}
