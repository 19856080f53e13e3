/** Templates built from recipes (API and CLI), and the official templates, against real runsc. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { createSandbox, exec, runCli, type TestPlatform } from '../fixture';
import { startTemplatesPlatform, type TemplatesPlatform } from '../templates';

let t: TemplatesPlatform;
let p: TestPlatform;
let tmp: string;
let templatesDir: string;
type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const build = (body: Record<string, unknown>) => t.build(body);
const assertNothingLeft = (name: string) => t.assertNothingLeft(name);

before(async () => {
  t = await startTemplatesPlatform();
  ({ p, tmp, templatesDir } = t);
});

after(async () => {
  await t?.stop();
});

describe('templates from recipes', () => {
  const cli = (args: string[]) => runCli(p, args, tmp);

  test('a failing step names the step and leaves nothing (API and CLI)', async () => {
    const steps = [{ run: 'echo one' }, { run: 'echo oops >&2; exit 3' }, { run: 'echo never' }];
    const r = await build({ name: 'broken', base: 'base', steps });
    assert.equal(r.status, 200);
    assert.equal(r.error?.code, 'TEMPLATE_BUILD_FAILED');
    assert.equal(r.error?.step, 2);
    assert.match(
      r.error?.message ?? '',
      /step 2 \(run: echo oops >&2; exit 3\) failed: exit code 3/,
    );
    assert.ok(r.logs.includes('oops'), r.logs.join('\n'));
    assert.ok(!r.logs.includes('never'));
    await assertNothingLeft('broken');

    writeFileSync(
      join(tmp, 'broken.json'),
      JSON.stringify({ name: 'broken', base: 'base', steps }),
    );
    const c = await cli(['template', 'build', 'broken.json']);
    assert.equal(c.code, 1);
    assert.match(c.stderr, /\[step 2\] oops/);
    assert.match(c.stderr, /error \[TEMPLATE_BUILD_FAILED\]: step 2 \(run: echo oops/);
    await assertNothingLeft('broken');
  });

  test('warren template build: run, copy, env, workdir, start and ready; sandboxes start from it', async () => {
    mkdirSync(join(tmp, 'recipe'), { recursive: true });
    writeFileSync(join(tmp, 'recipe/app.py'), 'import os\nprint(40 + 2, os.environ["APP_MODE"])\n');
    writeFileSync(
      join(tmp, 'recipe/py-app.json'),
      JSON.stringify({
        name: 'py-app',
        base: 'base',
        default_memory_mb: 256,
        steps: [
          {
            run: 'mkdir -p /srv && echo built > /srv/built.txt && rm /etc/debian_version && mv /etc/issue.net /srv/issue.moved && echo more >> /etc/issue && chmod 600 /etc/login.defs && echo "# old mtime" >> /etc/shells && touch -d @0 /etc/shells',
          },
          // A process a step leaves behind and a file in /tmp are not part of the template.
          { run: 'setsid sleep 600 >/dev/null 2>&1 < /dev/null & echo scratch > /tmp/scratch' },
          { copy: { src: 'app.py', dest: '/srv/app.py' } },
          { env: { APP_MODE: 'test' } },
          { workdir: '/srv' },
          {
            start: [
              'python3',
              '-c',
              'import time; open("/tmp/ready", "w").write("y"); time.sleep(1e6)',
            ],
          },
          { ready: { cmd: ['test', '-f', '/tmp/ready'] } },
        ],
      }),
    );
    const c = await cli(['template', 'build', 'recipe/py-app.json']);
    assert.equal(c.code, 0, c.stderr);
    assert.equal(c.stdout, 'py-app\n');
    assert.match(c.stderr, /step 3\/7: copy: \/srv\/app.py/);
    // A few changes: the build sandbox itself is the template's image, its
    // root a copy of the base's (the changes are in the image).
    assert.match(c.stderr, /MiB of changes: kept in the build sandbox's image/);
    assert.doesNotMatch(c.stderr, /paths changed/);
    assert.ok(existsSync(join(templatesDir, 'py-app/rootfs/etc/debian_version')));
    // The build sandbox and the bake's container are gone once the teardowns end.
    await p.host.settle();
    assert.deepEqual(
      p.runscContainers().filter((id) => /^(bake|bld)-/.test(id)),
      [],
    );
    const t = await p.json('/v1/templates/py-app');
    assert.equal(t.source, 'recipe');
    assert.equal(t.base, 'base');
    assert.equal(t.workdir, '/srv');
    assert.equal(t.default_memory_mb, 256);
    const got = await cli(['template', 'get', 'py-app']);
    assert.match(got.stdout, /source +recipe \(base base\)/);
    assert.match(got.stdout, /env +APP_MODE=test/);

    const id = await createSandbox(p, { template: 'py-app' });
    const res = await exec(p, id, { cmd: 'python3', args: ['app.py'] });
    assert.equal(res.stdout, '42 test\n');
    assert.equal(
      (await exec(p, id, { cmd: 'cat', args: ['built.txt', '/tmp/ready'] })).stdout,
      'built\ny',
    );
    // ...and the agent's own relay (bulk transfers, previews, egress) is still there.
    const leftovers = await exec(p, id, {
      cmd: 'sh',
      args: [
        '-c',
        'ls -A /tmp; cat /proc/[0-9]*/comm > /tmp/comm; grep -c "^sleep$" /tmp/comm; grep -c "^relay$" /tmp/comm; rm /tmp/comm',
      ],
    });
    assert.equal(leftovers.stdout, 'ready\n0\n1\n');
    // Deletions, renames and appends to files of the base are in the template...
    const check = await exec(p, id, {
      cmd: 'sh',
      args: [
        '-c',
        'test -e /etc/debian_version; echo $?; test -e /etc/issue.net; echo $?; cat /srv/issue.moved >/dev/null && tail -1 /etc/issue',
      ],
    });
    assert.equal(check.stdout, '1\n1\nmore\n');
    // Changes that leave the mtime older than the build (a chmod, a file given an old mtime) too.
    const older = await exec(p, id, {
      cmd: 'sh',
      args: ['-c', 'stat -c %a /etc/login.defs; tail -1 /etc/shells'],
    });
    assert.equal(older.stdout, '600\n# old mtime\n');
    // ...and the base's root, which the new root shares files with, is untouched.
    const baseRoot = join(templatesDir, 'base/rootfs');
    assert.ok(existsSync(join(baseRoot, 'etc/debian_version')));
    assert.ok(existsSync(join(baseRoot, 'etc/issue.net')));
    assert.doesNotMatch(readFileSync(join(baseRoot, 'etc/issue'), 'utf8'), /more/);
    // The template's root (a copy of the base's: the changes are in the image) has an empty /tmp.
    assert.deepEqual(readdirSync(join(templatesDir, 'py-app/rootfs/tmp')), []);
    // A recipe on it whose changes are too large for an image captures them into
    // a root of its own: the base's changes, which are in the base's image, too.
    const big = await build({
      name: 'py-app-big',
      base: 'py-app',
      steps: [{ run: 'head -c 70000000 /dev/urandom > /srv/big && echo big > /srv/big.txt' }],
    });
    assert.equal(big.error, undefined, JSON.stringify(big.error));
    const logs = big.logs.join('\n');
    assert.match(logs, /MiB of changes: capturing them into the template's root/);
    const captured = Number(/(\d+) paths changed/.exec(logs)?.[1]);
    assert.ok(captured > 2 && captured < 100, `captured ${captured} paths`);
    assert.ok(!existsSync(join(templatesDir, 'py-app-big/rootfs/etc/debian_version')));
    const onTop = await createSandbox(p, { template: 'py-app-big' });
    try {
      const all = await exec(p, onTop, {
        cmd: 'sh',
        args: [
          '-c',
          'python3 app.py; cat big.txt built.txt; test -e /etc/debian_version; echo $?; tail -1 /etc/issue; stat -c %a /etc/login.defs; tail -1 /etc/shells; stat -c %s big',
        ],
      });
      assert.equal(all.stdout, '42 test\nbig\nbuilt\n1\nmore\n600\n# old mtime\n70000000\n');
    } finally {
      await p.api(`/v1/sandboxes/${onTop}`, { method: 'DELETE' });
    }
    assert.equal((await p.api('/v1/templates/py-app-big', { method: 'DELETE' })).status, 204);
    // A rebuild would replace the root the sandbox runs on, and so would a delete.
    const refused = await p.api('/v1/templates/py-app/rebuild', { method: 'POST' });
    assert.equal(refused.status, 409);
    const rm = await cli(['template', 'rm', 'py-app']);
    assert.equal(rm.code, 1);
    assert.match(rm.stderr, /TEMPLATE_IN_USE/);
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    assert.equal((await cli(['template', 'rm', 'py-app'])).code, 0);
    assert.ok(!existsSync(join(templatesDir, 'py-app')));
  });
});

describe('recipes sized above their base', () => {
  test('are baked from a root of their own, for their own largest size', async () => {
    const r = await build({
      name: 'roomy',
      base: 'base',
      max_memory_mb: 6144,
      steps: [{ run: 'echo roomy > /roomy.txt' }],
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const logs = r.logs.join('\n');
    assert.match(logs, /sized above base: capturing the changes into a root/);
    assert.match(logs, /baking snapshot/);
    const id = await createSandbox(p, { template: 'roomy', memory_mb: 6144 });
    try {
      const res = await exec(p, id, {
        cmd: 'sh',
        args: ['-c', "cat /roomy.txt; awk '/^MemTotal/ { print int($2 / 1024) }' /proc/meminfo"],
      });
      const [text, memMb] = res.stdout.trim().split('\n');
      assert.equal(text, 'roomy');
      assert.ok(Number(memMb) > 5000, res.stdout);
    } finally {
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
    assert.equal((await p.api('/v1/templates/roomy', { method: 'DELETE' })).status, 204);
  });
});

describe('recipe builds racing a copy of their base', () => {
  test('hard links made to the base root meanwhile do not count as changes', async () => {
    // Another build (or anything) hard-linking the base's files changes only their ctime.
    let copying = true;
    const copies = (async () => {
      for (let i = 0; copying; i++) {
        const to = join(tmp, `base-copy-${i}`);
        await promisify(execFile)('cp', ['-al', join(templatesDir, 'base/rootfs'), to]);
        await rm(to, { recursive: true, force: true });
      }
    })();
    let r;
    try {
      r = await build({
        name: 'raced',
        base: 'base',
        // Changes too large for the image: captured into the template's root.
        steps: [
          {
            run: 'sleep 2; mkdir -p /srv && echo raced > /srv/raced.txt && head -c 70000000 /dev/urandom > /srv/big',
          },
        ],
      });
    } finally {
      copying = false;
      await copies;
    }
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.match(r.logs.join('\n'), /capturing them into the template's root/);
    const changed = Number(/(\d+) paths changed/.exec(r.logs.join('\n'))?.[1]);
    assert.ok(changed > 0 && changed < 100, `captured ${changed} paths`);
    const id = await createSandbox(p, { template: 'raced' });
    assert.equal((await exec(p, id, { cmd: 'cat', args: ['/srv/raced.txt'] })).stdout, 'raced\n');
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    assert.equal((await p.api('/v1/templates/raced', { method: 'DELETE' })).status, 204);
  });
});

describe('official templates', () => {
  // Not built in the tests (code-interpreter takes minutes); postgres-17 when a
  // prepare-templates run built code-interpreter (this platform never links postgres-17 in).
  const unbuiltName = () =>
    existsSync(join(templatesDir, 'code-interpreter/template.json'))
      ? 'postgres-17'
      : 'code-interpreter';

  test('every official template is listed with its state, description and build command', async () => {
    const name = unbuiltName();
    const { items } = await p.json<{ items: Json[] }>('/v1/templates');
    for (const official of ['base', 'code-interpreter', 'postgres-17'])
      assert.ok(
        items.some((i) => i.name === official),
        `${official} is listed: ${items.map((i) => i.name).join(', ')}`,
      );
    const base = items.find((i) => i.name === 'base')!;
    assert.equal(base.state, 'ready');
    assert.match(base.description, /python3/);
    const listed = items.find((i) => i.name === name)!;
    assert.equal(listed.state, 'not_built');
    assert.equal(listed.built_at, null);
    assert.equal(listed.source, 'builtin');
    assert.ok(listed.description.length > 0);
    assert.deepEqual(listed.build, {
      cli: `warren template rebuild ${name}`,
      api: `POST /v1/templates/${name}/rebuild`,
    });
    // GET answers the same record; an unknown name is still 404.
    const got = await p.api(`/v1/templates/${name}`);
    assert.equal(got.status, 200);
    assert.deepEqual(await got.json(), listed);
    const unknown = await p.api('/v1/templates/no-such-template');
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as Json).error.code, 'TEMPLATE_NOT_FOUND');

    const ls = await runCli(p, ['template', 'ls'], tmp);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, new RegExp(`\\n${name}\\s+not_built\\s+.*-\\n`));
    assert.match(ls.stderr, new RegExp(`${name} is not built: warren template rebuild ${name}`));
  });

  test('a create from an unbuilt official template is 409 TEMPLATE_NOT_BUILT naming the build, and makes nothing', async () => {
    const name = unbuiltName();
    const res = await p.api('/v1/sandboxes', { method: 'POST', json: { template: name } });
    assert.equal(res.status, 409);
    const { error } = (await res.json()) as Json;
    assert.equal(error.code, 'TEMPLATE_NOT_BUILT');
    assert.ok(error.message.includes(`warren template rebuild ${name}`), error.message);
    assert.ok(error.message.includes(`POST /v1/templates/${name}/rebuild`), error.message);
    for (const q of ['', '?state=stopped']) {
      const { items } = await p.json<{ items: Json[] }>(`/v1/sandboxes${q}`);
      assert.deepEqual(
        items.filter((s) => s.template === name),
        [],
      );
    }
    assert.ok(!existsSync(join(templatesDir, name)), 'no template directory was made');
    await p.host.settle();
    assert.deepEqual(p.runscContainers(), []);
    // Unknown names are still TEMPLATE_NOT_FOUND; the official name is not free for a user build.
    const unknown = await p.api('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'no-such-template' },
    });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as Json).error.code, 'TEMPLATE_NOT_FOUND');
    const taken = await build({ name, base: 'base', steps: [{ run: 'true' }] });
    assert.equal(taken.error?.code, 'TEMPLATE_EXISTS');
    const del = await p.api(`/v1/templates/${name}`, { method: 'DELETE' });
    assert.equal(del.status, 409);
    assert.equal(((await del.json()) as Json).error.code, 'TEMPLATE_NOT_BUILT');
    assert.equal((await p.json(`/v1/templates/${name}`)).state, 'not_built');
  });

  test('code-interpreter imports numpy, pandas and matplotlib', async (t) => {
    // Its debootstrap takes minutes, so it is built only when asked:
    // WARREN_TEMPLATES=code-interpreter node --import tsx scripts/prepare-templates.ts
    if (!existsSync(join(templatesDir, 'code-interpreter/template.json'))) {
      t.skip('code-interpreter is not in .state/templates (build it with prepare-templates)');
      return;
    }
    const id = await createSandbox(p, { template: 'code-interpreter' });
    const code = [
      'import numpy, pandas, matplotlib',
      'import matplotlib.pyplot as plt',
      'df = pandas.DataFrame({"x": numpy.arange(4)})',
      'plt.plot(df.x, df.x ** 2); plt.savefig("/tmp/p.png")',
      'print(int(df.x.sum()), matplotlib.get_backend())',
    ].join('\n');
    const res = await exec(p, id, { cmd: 'python3', args: ['-c', code] });
    assert.equal(res.stdout, '6 agg\n', res.stderr);
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
  });
});
