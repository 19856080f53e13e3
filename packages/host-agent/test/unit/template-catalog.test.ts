import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { TemplateCatalog } from '../../src/templates/catalog';

const meta = { name: 'x', defaultCpu: 1, defaultMemoryMb: 256, maxCpu: 1, maxMemoryMb: 256 };

describe('template catalog: interrupted builds', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  async function catalogWith(builderPid: number | undefined): Promise<TemplateCatalog> {
    const root = await mkdtemp(join(tmpdir(), 'warren-catalog-'));
    dirs.push(root);
    const catalog = new TemplateCatalog(root, 'http://127.0.0.1:9/');
    await catalog.markBuilding({ ...meta, source: 'recipe' });
    const file = join(root, 'x', 'template.json');
    const rec = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    assert.equal(rec.builder_pid, process.pid, 'the builder records its pid');
    await writeFile(file, JSON.stringify({ ...rec, builder_pid: builderPid }));
    return catalog;
  }

  it('removes a build whose builder is gone, or was this process before a restart', async () => {
    const gone = spawn('true');
    await new Promise((resolve) => gone.once('exit', resolve));
    for (const pid of [gone.pid, process.pid, undefined]) {
      const catalog = await catalogWith(pid);
      assert.deepEqual(await catalog.removeInterrupted(), ['x'], `pid ${pid}`);
      assert.ok(!existsSync(catalog.dir('x')));
    }
  });

  it('leaves alone a build another live process is running', async () => {
    const builder = spawn('sleep', ['30']);
    try {
      const catalog = await catalogWith(builder.pid);
      assert.deepEqual(await catalog.removeInterrupted(), []);
      assert.equal((await catalog.read('x'))?.state, 'building');
    } finally {
      builder.kill();
    }
  });
});
