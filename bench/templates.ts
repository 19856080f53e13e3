/**
 * Template rows of `npm run bench`: build time of `base` (the bake; its root
 * is cached), of a 3-step recipe, and create -> first exec from the
 * user-built template beside a direct runsc restore of its own snapshot.
 * They run on a second platform over a private copy of the templates
 * directory, so the shared cache is not rebuilt under other runs.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { GvisorDriver } from '../packages/host-agent/src/runtime/gvisor/driver';
import { officialRecipe } from '../packages/host-agent/src/templates/catalog';
import { deriveRoot } from '../packages/host-agent/src/templates/derived-root';
import { startTestPlatform, RUNSC, TEMPLATES_DIR, type TestPlatform } from '../test/fixture';
import type { Row } from './stats';

const RUNS = Number(process.env.BENCH_TEMPLATE_RUNS ?? 2);
const CREATES = Number(process.env.BENCH_CREATES ?? 10);
const now = () => performance.now();

const RECIPE_STEPS = [
  { run: 'mkdir -p /srv && echo built > /srv/built.txt' },
  { copy: { dest: '/srv/app.py', content: Buffer.from('print(42)\n').toString('base64') } },
  { workdir: '/srv' },
];

async function streamBuild(p: TestPlatform, path: string, body?: unknown): Promise<number> {
  const t = now();
  const res = await p.api(path, { method: 'POST', ...(body !== undefined && { json: body }) });
  const text = await res.text();
  const last = JSON.parse(text.trim().split('\n').pop() ?? '{}') as { type?: string };
  if (last.type !== 'done') throw new Error(`${path}: ${text.slice(-500)}`);
  return now() - t;
}

/** A platform over a private templates directory holding hard links to `base`. */
async function privatePlatform(
  prefix: string,
): Promise<{ tmp: string; templatesDir: string; p: TestPlatform }> {
  const tmp = mkdtempSync(prefix);
  const templatesDir = join(tmp, 'templates');
  mkdirSync(templatesDir);
  for (const t of ['base', '.guest'])
    execFileSync('cp', ['-al', join(TEMPLATES_DIR, t), join(templatesDir, t)]);
  return { tmp, templatesDir, p: await startTestPlatform({ templatesDir, templates: ['base'] }) };
}

/** Boots a root with runsc and checkpoints it at once: the bare runtime part of a bake. */
async function directBake(p: TestPlatform, dir: string, n: number): Promise<number> {
  const driver = new GvisorDriver({ binary: RUNSC, stateDir: join(dir, 'runsc') });
  const t = await p.host.templateRecord('base');
  const id = `direct-bake-${process.pid}-${n}`;
  const workDir = join(dir, id);
  mkdirSync(join(workDir, 'chan'), { recursive: true });
  const started = now();
  await driver.boot({
    id,
    rootfs: t.rootfs,
    guestDir: join(p.context.config.templatesDir, '.guest', t.guest_key),
    channelDir: join(workDir, 'chan'),
    workDir,
    cpu: 2,
    memoryMb: 4096,
    hostname: id,
    env: {},
  });
  await driver.checkpoint(id, join(workDir, 'image'));
  const took = now() - started;
  await driver.destroy(id);
  return took;
}

export async function templateRows(
  restoreAndExec: (p: TestPlatform, image: string, template: string) => Promise<[number, string]>,
  destroyDirect: (ids: string[]) => Promise<void>,
): Promise<{ rows: Row[]; createRow: Row }> {
  const { tmp, p } = await privatePlatform('/tmp/wbt-');
  try {
    const base: Row = {
      name: 'template build: base (bake; root cached)',
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'runsc run + runsc checkpoint of its root',
    };
    const recipe: Row = {
      name: 'template build: 3-step recipe on base',
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'runsc run + runsc checkpoint of base root',
    };
    for (let i = 0; i < RUNS; i++) {
      base.warren.push(await streamBuild(p, '/v1/templates/base/rebuild'));
      base.direct.push(await directBake(p, tmp, i));
      recipe.warren.push(
        await streamBuild(p, '/v1/templates', {
          name: `bench-recipe-${i}`,
          base: 'base',
          steps: RECIPE_STEPS,
        }),
      );
      recipe.direct.push(await directBake(p, tmp, 100 + i));
      if (i < RUNS - 1) await p.api(`/v1/templates/bench-recipe-${i}`, { method: 'DELETE' });
    }
    const name = `bench-recipe-${RUNS - 1}`;
    const tpl = await p.host.templateRecord(name);
    const create: Row = {
      name: 'create -> first exec (user-built template)',
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'runsc restore of its snapshot + runsc exec true',
    };
    for (let i = 0; i < CREATES; i++) {
      const t = now();
      const sbx = await p.json<{ id: string }>('/v1/sandboxes', {
        method: 'POST',
        json: { template: name },
      });
      await p.json(`/v1/sandboxes/${sbx.id}/exec`, { method: 'POST', json: { cmd: 'true' } });
      create.warren.push(now() - t);
      await p.api(`/v1/sandboxes/${sbx.id}`, { method: 'DELETE' });
      await p.host.settle();
      const [d, id] = await restoreAndExec(p, tpl.snapshot, name);
      create.direct.push(d);
      await destroyDirect([id]);
    }
    return { rows: [base, recipe, create], createRow: create };
  } finally {
    await p.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * `BENCH_ONLY=official` (not in the default run: minutes, and it downloads
 * from the Debian mirror): the `code-interpreter` template built from the
 * `base` root, once with an empty package cache and once with the cache the
 * first build filled, beside the bare OS work of the first: the same
 * apt-get install in a chroot of a copy of the base root, no package cache.
 */
export async function officialBuildRows(): Promise<Row[]> {
  const { tmp, templatesDir, p } = await privatePlatform('/tmp/wbo-');
  try {
    const recipe = officialRecipe('code-interpreter');
    if (!recipe) throw new Error('no code-interpreter recipe');
    const rows: Row[] = [];
    for (const cache of ['empty', 'filled by the first build']) {
      const warren = await streamBuild(p, '/v1/templates/code-interpreter/rebuild');
      rows.push({
        name: `template build: code-interpreter, package cache ${cache}`,
        unit: 'ms',
        warren: [warren],
        direct: [],
        directName: 'chroot apt-get install on a copy of base root, no cache',
      });
      await p.api('/v1/templates/code-interpreter', { method: 'DELETE' });
      rmSync(join(templatesDir, 'code-interpreter'), { recursive: true, force: true });
    }
    const t = now();
    await deriveRoot(
      join(tmp, 'direct-root'),
      {
        baseRoot: join(templatesDir, 'base', 'rootfs'),
        packages: recipe.packages,
        aptCache: join(tmp, 'no-cache'),
      },
      () => undefined,
    );
    const direct = now() - t;
    for (const r of rows) r.direct.push(direct);
    return rows;
  } finally {
    await p.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}
