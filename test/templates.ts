/**
 * A platform for template tests: templates built here go into a private copy
 * of the templates directory (base, the guest bundles and code-interpreter
 * when prepared are hard-linked in), so the shared cache stays untouched.
 * Also: reading a build's ndjson answer, and checking a failed build left nothing.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TEMPLATES_DIR, startTestPlatform, type TestPlatform } from './fixture';

export interface BuildOutcome {
  status: number;
  logs: string[];
  done?: { name: string; [k: string]: unknown };
  error?: { code: string; message: string; step?: number };
}

export async function outcome(res: Response): Promise<BuildOutcome> {
  if (!res.headers.get('content-type')?.includes('ndjson')) {
    const body = (await res.json()) as { error: BuildOutcome['error'] };
    return { status: res.status, logs: [], error: body.error };
  }
  const out: BuildOutcome = { status: res.status, logs: [] };
  for (const line of (await res.text()).split('\n').filter(Boolean)) {
    const e = JSON.parse(line) as {
      type: string;
      line?: string;
      template?: never;
    } & BuildOutcome['error'];
    if (e.type === 'log') out.logs.push(e.line as string);
    else if (e.type === 'done') out.done = e.template;
    else if (e.type === 'error') out.error = { code: e.code, message: e.message, step: e.step };
  }
  return out;
}

export interface TemplatesPlatform {
  p: TestPlatform;
  /** Scratch space of the suite (images, recipes); removed by stop(). */
  tmp: string;
  /** The private templates directory of this platform. */
  templatesDir: string;
  /** POST /v1/templates. */
  build(body: Record<string, unknown>): Promise<BuildOutcome>;
  /** POST /v1/templates/{name}/image with a tar file. */
  upload(name: string, file: string, query?: string): Promise<BuildOutcome>;
  /** Builds what failed must leave nothing: no template dir, no build sandbox. */
  assertNothingLeft(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** `also`: more built templates of the shared cache to link in (e.g. postgres-17 for databases). */
export async function startTemplatesPlatform(
  options: { also?: string[] } = {},
): Promise<TemplatesPlatform> {
  const tmp = mkdtempSync('/tmp/wtpl-');
  const templatesDir = join(tmp, 'templates');
  let p: TestPlatform | undefined;
  try {
    mkdirSync(templatesDir);
    // code-interpreter only when a prepare-templates run built it (WARREN_TEMPLATES=code-interpreter).
    const ci = existsSync(join(TEMPLATES_DIR, 'code-interpreter/template.json'));
    for (const t of [
      'base',
      '.guest',
      ...(ci ? ['code-interpreter'] : []),
      ...(options.also ?? []),
    ])
      execFileSync('cp', ['-al', join(TEMPLATES_DIR, t), join(templatesDir, t)]);
    p = await startTestPlatform({ templatesDir, templates: ['base'] });
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  const platform = p;
  return {
    p: platform,
    tmp,
    templatesDir,
    build: (body) => platform.api('/v1/templates', { method: 'POST', json: body }).then(outcome),
    upload: (name, file, query = '') =>
      platform
        .api(`/v1/templates/${name}/image${query}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-tar' },
          body: readFileSync(file),
        })
        .then(outcome),
    async assertNothingLeft(name) {
      await platform.host.settle();
      assert.ok(!existsSync(join(templatesDir, name)), `${name} left a directory`);
      assert.deepEqual(
        platform.runscContainers().filter((c) => c.startsWith('bld-')),
        [],
      );
      assert.deepEqual(
        readdirSync(join(platform.home, 'sandboxes')).filter(
          (d) => d.startsWith('bld-') || d.startsWith('bake-'),
        ),
        [],
      );
      const res = await platform.api(`/v1/templates/${name}`);
      assert.equal(res.status, 404);
    },
    async stop() {
      try {
        await platform.stop();
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
  };
}
