/**
 * Builds (if missing) and bakes the templates the tests and benchmarks use,
 * into the shared cache .state/templates. Safe to run again: a template whose
 * snapshot matches the current guest agent and runtime is left as it is.
 */
import { join } from 'node:path';
import { createHostAgent } from '@warren/host-agent';
import { REPO_ROOT, hostAgentConfig, loadConfig } from '../packages/server/src/config';

const state = join(REPO_ROOT, '.state');
const host = await createHostAgent(
  hostAgentConfig(
    loadConfig(process.env, {
      hostId: 'host_prepare',
      home: join(state, 'prepare'),
      templatesDir: join(state, 'templates'),
      driver: 'gvisor',
      runsc: join(state, 'bin/runsc'),
      readyTimeoutMs: 30_000,
      snapshotStore: { kind: 'local' },
    }),
  ),
);
const started = Date.now();
// base for everything; postgres-17 for the managed databases (test/e2e/db-postgres.test.ts);
// code-interpreter for test/e2e/code-interpreter.test.ts (made from base's root),
// typescript for its language server (test/e2e/lsp-typescript.test.ts).
const names = (
  process.env.WARREN_TEMPLATES ?? 'base,postgres-17,code-interpreter,typescript'
).split(',');
await host.templates.ensure(names, (line) => console.log(`[templates] ${line}`));
for (const name of names) {
  const t = await host.templates.get(name);
  if (!t) throw new Error(`template ${name} was not built`);
  console.log(
    `[templates] ${t.name}: ready (rootfs ${Math.round(t.rootfs_bytes / 1048576)} MiB, snapshot ${Math.round(t.snapshot_bytes / 1048576)} MiB)`,
  );
}
// Nothing of this agent outlives it: no sandbox, and no mount (the volume pool).
await host.close({ destroy: true });
console.log(`[templates] done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
