/**
 * Builds (if missing) and bakes the templates the tests and benchmarks use,
 * into the shared cache .state/templates. Safe to run again: a template whose
 * snapshot matches the current guest agent and runtime is left as it is.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { HostAgent, createDriver, createSnapshotStore } from '@warren/host-agent';
import { REPO_ROOT, defaultMemoryBudgetMb } from '../packages/server/src/config';

const state = join(REPO_ROOT, '.state');
const work = join(state, 'prepare');
mkdirSync(join(work, 'sandboxes'), { recursive: true });
const driver = createDriver('gvisor', {
  runsc: join(state, 'bin/runsc'),
  stateDir: join(work, 'runsc'),
});
const host = new HostAgent(
  {
    hostId: 'host_prepare',
    sandboxesDir: join(work, 'sandboxes'),
    templatesDir: join(state, 'templates'),
    memoryBudgetMb: defaultMemoryBudgetMb(),
    debianMirror: process.env.WARREN_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian',
    readyTimeoutMs: 30_000,
    snapshotStore: createSnapshotStore(join(work, 'snapshots')),
  },
  driver,
);
const started = Date.now();
for (const name of (process.env.WARREN_TEMPLATES ?? 'base').split(',')) {
  const t = await host.ensureTemplate(name, (line) => console.log(`[templates] ${line}`));
  console.log(
    `[templates] ${t.name}: ready (rootfs ${Math.round(t.rootfs_bytes / 1048576)} MiB, snapshot ${Math.round(t.snapshot_bytes / 1048576)} MiB)`,
  );
}
await host.close();
console.log(`[templates] done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
