/**
 * Templates built from images and recipes, against real runsc.
 *
 * The images are made here (no registry is reachable):
 * - "Debian": the `base` template's root packed as one layer, plus a second
 *   layer with a whiteout and an opaque directory, as an OCI image layout tar
 *   at a server-side path.
 * - "Alpine" (musl): there is no Alpine image on these machines, so this is a
 *   root whose only libc is musl: musl's dynamic loader /lib/ld-musl-x86_64.so.1
 *   and a program compiled with musl-gcc against it, no glibc at all. It is
 *   uploaded as a `docker save` tar. It proves the guest agent runs whatever
 *   the image's libc is, and that the image's own musl programs run.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  TEMPLATES_DIR,
  createSandbox,
  exec,
  startTestPlatform,
  type TestPlatform,
  runCli,
} from '../fixture';
import { dockerSave, ociLayout, tarImage, tarOf, tarOfDir } from '../images';

let p: TestPlatform;
let tmp: string;
/** Templates this file builds go into a private copy of the templates dir (base is hard-linked in). */
let templatesDir: string;

interface BuildOutcome {
  status: number;
  logs: string[];
  done?: { name: string; [k: string]: unknown };
  error?: { code: string; message: string; step?: number };
}

async function outcome(res: Response): Promise<BuildOutcome> {
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

const build = (body: Record<string, unknown>) =>
  p.api('/v1/templates', { method: 'POST', json: body }).then(outcome);

const upload = (name: string, file: string, query = '') =>
  p
    .api(`/v1/templates/${name}/image${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-tar' },
      body: readFileSync(file),
    })
    .then(outcome);

/** Builds what failed must leave nothing: no template dir, no build sandbox. */
async function assertNothingLeft(name: string): Promise<void> {
  await p.context.host.settle();
  assert.ok(!existsSync(join(templatesDir, name)), `${name} left a directory`);
  assert.deepEqual(
    p.runscContainers().filter((c) => c.startsWith('bld-')),
    [],
  );
  assert.deepEqual(
    readdirSync(join(p.home, 'sandboxes')).filter(
      (d) => d.startsWith('bld-') || d.startsWith('bake-'),
    ),
    [],
  );
  const res = await p.api(`/v1/templates/${name}`);
  assert.equal(res.status, 404);
}

before(async () => {
  tmp = mkdtempSync('/tmp/wtpl-');
  templatesDir = join(tmp, 'templates');
  // The shared cache stays untouched: base (and the guest bundles) are copied as hard links.
  mkdirSync(templatesDir);
  // code-interpreter only when a prepare-templates run built it (WARREN_TEMPLATES=code-interpreter).
  const ci = existsSync(join(TEMPLATES_DIR, 'code-interpreter/template.json'));
  for (const t of ['base', '.guest', ...(ci ? ['code-interpreter'] : [])])
    execFileSync('cp', ['-al', join(TEMPLATES_DIR, t), join(templatesDir, t)]);
  p = await startTestPlatform({ templatesDir, templates: ['base'] });
});

after(async () => {
  await p?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe('templates from images', () => {
  test('a Debian-based OCI image tar: layers, whiteout, opaque dir, env, workdir, start command', async () => {
    const base = join(templatesDir, 'base/rootfs');
    const layer1 = tarOfDir(base, join(tmp, 'debian-layer.tar'));
    const layer2 = await tarOf([
      { name: 'etc/.wh.debian_version', content: '' },
      { name: 'usr/share/doc/' },
      { name: 'usr/share/doc/.wh..wh..opq', content: '' },
      { name: 'usr/share/doc/ONLY', content: 'opaque\n' },
      { name: 'app/' },
      { name: 'app/hello.txt', content: 'hello from layer 2\n' },
    ]);
    const dir = ociLayout(
      join(tmp, 'debian-oci'),
      [layer1, layer2],
      {
        Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'GREETING=bonjour'],
        WorkingDir: '/app',
        User: 'nobody',
        Cmd: ['/bin/sh', '-c', 'echo up > /tmp/started; exec sleep 100000'],
      },
      { gzip: true },
    );
    const tarFile = tarImage(dir, join(tmp, 'debian-oci.tar'));
    const r = await build({
      name: 'deb-image',
      image: { path: tarFile },
      default_memory_mb: 256,
      ready: { cmd: ['test', '-f', '/tmp/started'], timeout: 20 },
    });
    assert.equal(r.status, 200, JSON.stringify(r.error));
    assert.equal(r.error, undefined);
    assert.ok(
      r.logs.some((l) => l.startsWith('layer 2/2')),
      r.logs.join('\n'),
    );
    const t = await p.json(`/v1/templates/deb-image`);
    assert.equal(t.state, 'ready');
    assert.equal(t.source, 'image');
    assert.equal(t.layers.length, 2);
    assert.equal(t.workdir, '/app');
    assert.equal(t.user, 'nobody');
    assert.equal(t.env.GREETING, 'bonjour');
    assert.equal(t.default_memory_mb, 256);
    assert.ok(t.build_ms > 0 && t.rootfs_bytes > 100e6);

    const id = await createSandbox(p, { template: 'deb-image' });
    const sh = (line: string) => exec(p, id, { cmd: 'sh', args: ['-c', line] });
    assert.equal(
      (await sh('pwd; cat hello.txt; echo $GREETING')).stdout,
      '/app\nhello from layer 2\nbonjour\n',
    );
    assert.equal((await sh('test -e /etc/debian_version; echo $?')).stdout, '1\n');
    assert.equal((await sh('ls /usr/share/doc')).stdout, 'ONLY\n');
    assert.equal((await sh('cat /tmp/started')).stdout, 'up\n');
    // The image's User is the default user, the start command's too; root is still there.
    assert.equal((await sh('id -u; stat -c %u /tmp/started')).stdout, '65534\n65534\n');
    assert.equal((await exec(p, id, { cmd: 'id', args: ['-u'], user: 'root' })).stdout, '0\n');
    // The start command was running when the snapshot was taken, so it runs in every copy.
    const procs = await p.json<{ items: Array<{ cmd: string; args: string[]; state: string }> }>(
      `/v1/sandboxes/${id}/processes`,
    );
    assert.ok(
      procs.items.some((x) => x.args.join(' ').includes('sleep 100000') && x.state === 'running'),
    );
    // Env of the sandbox goes over the template's.
    const id2 = await createSandbox(p, { template: 'deb-image', env: { GREETING: 'hi' } });
    assert.equal(
      (await exec(p, id2, { cmd: 'sh', args: ['-c', 'echo $GREETING'] })).stdout,
      'hi\n',
    );

    // Delete is refused while sandboxes depend on it.
    const refused = await p.api('/v1/templates/deb-image', { method: 'DELETE' });
    assert.equal(refused.status, 409);
    assert.equal(
      ((await refused.json()) as { error: { code: string } }).error.code,
      'TEMPLATE_IN_USE',
    );
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p.api(`/v1/sandboxes/${id2}`, { method: 'DELETE' });
    assert.equal((await p.api('/v1/templates/deb-image', { method: 'DELETE' })).status, 204);
    assert.ok(!existsSync(join(templatesDir, 'deb-image')));
  });

  test('a musl-only ("Alpine") image uploaded as a docker save tar', async (t) => {
    const musl = '/lib/ld-musl-x86_64.so.1';
    if (!existsSync(musl) || !existsSync('/usr/bin/musl-gcc')) {
      t.skip('musl-tools is not installed (scripts/setup.sh installs it)');
      return;
    }
    const src = join(tmp, 'hello.c');
    writeFileSync(
      src,
      '#include <stdio.h>\n#include <stdlib.h>\nint main(void){printf("hello from musl %s\\n", getenv("FLAVOUR"));return 0;}\n',
    );
    const bin = join(tmp, 'hello-musl');
    execFileSync('musl-gcc', ['-O2', '-o', bin, src]); // dynamic: needs the musl loader
    assert.match(
      execFileSync('file', ['-L', bin]).toString(),
      /dynamically linked, interpreter \/lib\/ld-musl/,
    );
    const root = join(tmp, 'musl-root');
    mkdirSync(join(root, 'lib'), { recursive: true });
    mkdirSync(join(root, 'bin'), { recursive: true });
    copyFileSync(realpathSync(musl), join(root, 'lib/ld-musl-x86_64.so.1'));
    copyFileSync(bin, join(root, 'bin/hello'));
    execFileSync('chmod', ['755', join(root, 'bin/hello'), join(root, 'lib/ld-musl-x86_64.so.1')]);
    const layer = readFileSync(tarOfDir(root, join(tmp, 'musl-layer.tar')));
    const image = tarImage(
      dockerSave(join(tmp, 'musl-docker'), [layer], { Env: ['FLAVOUR=musl'] }),
      join(tmp, 'musl.tar'),
    );
    const r = await upload('musl', image, '?default_memory_mb=128');
    assert.equal(r.status, 200, JSON.stringify(r.error));
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.done?.name, 'musl');
    const id = await createSandbox(p, { template: 'musl' });
    const res = await exec(p, id, { cmd: '/bin/hello' });
    assert.equal(res.stdout, 'hello from musl musl\n');
    // No glibc anywhere in the image: only the musl loader.
    const files = await p.json<{ items: Array<{ name: string }> }>(
      `/v1/sandboxes/${id}/files/list?path=/lib`,
    );
    assert.deepEqual(
      files.items.map((f) => f.name),
      ['ld-musl-x86_64.so.1'],
    );
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
  });

  test('bad images are refused and leave nothing', async () => {
    const junk = join(tmp, 'junk.tar');
    writeFileSync(junk, 'not a tar'.repeat(300));
    let r = await upload('junk', junk);
    assert.equal(r.status, 400);
    assert.equal(r.error?.code, 'INVALID_IMAGE');
    await assertNothingLeft('junk');

    const noManifest = tarImage(
      (mkdirSync(join(tmp, 'nomani/blobs'), { recursive: true }), join(tmp, 'nomani')),
      join(tmp, 'nomani.tar'),
    );
    r = await upload('nomani', noManifest);
    assert.equal(r.error?.code, 'INVALID_IMAGE');
    assert.match(r.error?.message ?? '', /index\.json|manifest\.json/);
    await assertNothingLeft('nomani');

    const marker = join(tmp, 'escaped');
    const evil = await tarOf([
      { name: 'etc/' },
      { name: `../../../../../../..${marker}`, content: 'x' },
    ]);
    r = await build({
      name: 'evil',
      image: { path: tarImage(ociLayout(join(tmp, 'evil'), [evil], {}), join(tmp, 'evil.tar')) },
    });
    assert.equal(r.error?.code, 'INVALID_IMAGE');
    assert.match(r.error?.message ?? '', /outside the root/);
    assert.ok(!existsSync(marker));
    await assertNothingLeft('evil');

    // An absolute symlink to a host directory, then a file "through" it: contained in the root.
    const hostDir = join(tmp, 'host-victim');
    mkdirSync(hostDir);
    const sneaky = await tarOf([
      { name: 'bin/' },
      { name: 'bin/hello', content: 'x', mode: 0o755 },
      { name: 'victim', type: 'symlink', linkname: hostDir },
      { name: 'victim/planted', content: 'x' },
    ]);
    r = await build({
      name: 'sneaky',
      image: { path: ociLayout(join(tmp, 'sneaky'), [sneaky], {}) },
      start: null,
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual(readdirSync(hostDir), []);
    assert.ok(existsSync(join(templatesDir, 'sneaky/rootfs', hostDir, 'planted')));
    assert.equal((await p.api('/v1/templates/sneaky', { method: 'DELETE' })).status, 204);

    r = await build({ name: 'Bad/Name', image: { path: junk } });
    assert.equal(r.status, 400);
    r = await build({ name: 'base', base: 'base' });
    assert.equal(r.error?.code, 'TEMPLATE_EXISTS');
    r = await build({ name: 'x1', base: 'no-such-template' });
    assert.equal(r.error?.code, 'TEMPLATE_NOT_FOUND');
  });
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
            run: 'mkdir -p /srv && echo built > /srv/built.txt && rm /etc/debian_version && mv /etc/issue.net /srv/issue.moved && echo more >> /etc/issue',
          },
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
    assert.match(c.stderr, /\[step 2\]|step 2\/6: copy: \/srv\/app.py/);
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
    // Deletions, renames and appends to files of the base are in the template...
    const check = await exec(p, id, {
      cmd: 'sh',
      args: [
        '-c',
        'test -e /etc/debian_version; echo $?; test -e /etc/issue.net; echo $?; cat /srv/issue.moved >/dev/null && tail -1 /etc/issue',
      ],
    });
    assert.equal(check.stdout, '1\n1\nmore\n');
    // ...and the base's root, which the new root shares files with, is untouched.
    const baseRoot = join(templatesDir, 'base/rootfs');
    assert.ok(existsSync(join(baseRoot, 'etc/debian_version')));
    assert.ok(existsSync(join(baseRoot, 'etc/issue.net')));
    assert.doesNotMatch(readFileSync(join(baseRoot, 'etc/issue'), 'utf8'), /more/);
    // Nothing of the capture is left in the template.
    assert.deepEqual(readdirSync(join(templatesDir, 'py-app/rootfs/tmp')), []);
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

describe('official templates', () => {
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
