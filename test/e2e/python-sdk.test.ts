/**
 * The Python SDK (python/) against a real platform (gVisor, real runsc): runs
 * its pytest suite (python/tests) with the platform's URL and token, from
 * source (PYTHONPATH=python/src, nothing installed). The suite builds
 * templates, so the platform gets a private copy of the templates directory
 * (hard links of base, the guest bundles, postgres-17 and code-interpreter), like the template tests.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO, TEMPLATES_DIR, startTestPlatform, type TestPlatform } from '../fixture';

const PYTHON = '/usr/bin/python3';

function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

describe('Python SDK (pytest against real gVisor)', { timeout: 600_000 }, () => {
  let p: TestPlatform | undefined;
  let tmp: string;

  before(async () => {
    tmp = mkdtempSync('/tmp/wpy-');
    const templatesDir = join(tmp, 'templates');
    mkdirSync(templatesDir);
    for (const t of ['base', '.guest', 'postgres-17', 'code-interpreter']) {
      if (existsSync(join(TEMPLATES_DIR, t)))
        execFileSync('cp', ['-al', join(TEMPLATES_DIR, t), join(templatesDir, t)]);
    }
    p = await startTestPlatform({ templatesDir, templates: ['base'], dbPort: 0 });
  });

  after(async () => {
    try {
      await p?.stop();
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('passes the pytest suite of python/tests', async () => {
    assert.ok(p);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      WARREN_API: p.url,
      WARREN_API_KEY: p.adminToken,
      // No token file of a platform on this machine may be picked up instead.
      WARREN_HOME: join(tmp, 'no-warren-home'),
      PYTHONPATH: join(REPO, 'python/src'),
      PYTHONDONTWRITEBYTECODE: '1',
    };
    // Pytest's cache is off so that the run leaves no files in the checkout.
    const started = Date.now();
    const r = await run(
      PYTHON,
      ['-m', 'pytest', 'python/tests', '-q', '-p', 'no:cacheprovider', '--durations=5'],
      env,
    );
    const seconds = Math.round((Date.now() - started) / 1000);
    // Exit code 5 (no test collected) is a failure too: only 0 passes.
    assert.equal(r.code, 0, `pytest exited with ${r.code} after ${seconds} s:\n${r.output}`);
    const summary = /(\d+) passed/.exec(r.output);
    assert.ok(summary && Number(summary[1]) > 0, `no test passed:\n${r.output}`);
    assert.doesNotMatch(r.output, /\d+ (failed|error)/, r.output);
    console.log(r.output.trim().split('\n').slice(-8).join('\n'));

    // The suite cleaned up after itself: no sandbox, volume or database is left.
    const left = await p.json<{ items: Array<{ id: string }> }>('/v1/sandboxes');
    assert.deepEqual(left.items, []);
    assert.deepEqual((await p.json<{ items: unknown[] }>('/v1/volumes')).items, []);
    assert.deepEqual((await p.json<{ items: unknown[] }>('/v1/databases')).items, []);
  });
});
