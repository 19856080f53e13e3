/**
 * Templates built from images, against real runsc.
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
  readFileSync,
  readdirSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createSandbox, exec, type TestPlatform } from '../fixture';
import { dockerSave, ociLayout, tarImage, tarOf, tarOfDir } from '../images';
import { startTemplatesPlatform, type TemplatesPlatform } from '../templates';

let t: TemplatesPlatform;
let p: TestPlatform;
let tmp: string;
let templatesDir: string;
const build = (body: Record<string, unknown>) => t.build(body);
const upload = (name: string, file: string, query?: string) => t.upload(name, file, query);
const assertNothingLeft = (name: string) => t.assertNothingLeft(name);

before(async () => {
  t = await startTemplatesPlatform();
  ({ p, tmp, templatesDir } = t);
});

after(async () => {
  await t?.stop();
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

describe('a platform closed during a template build', () => {
  test('stops the bake and leaves no runtime container behind', async () => {
    const own = await startTemplatesPlatform();
    try {
      // A tiny image whose readiness check never passes: its bake waits for it. The
      // start command is the guest bundle's own node, the image having no program.
      const layer = await tarOf([{ name: 'bin/' }, { name: 'tmp/' }]);
      const path = ociLayout(join(own.tmp, 'held'), [layer], {});
      const node = ['/opt/warren/lib/ld-linux-x86-64.so.2', '--library-path', '/opt/warren/lib'];
      const building = own.p.host.templates.build(
        {
          name: 'held',
          image: { path },
          start: [...node, '/opt/warren/node', '-e', 'setInterval(() => {}, 1e9)'],
          ready: { cmd: ['/bin/false'], timeout: 600 },
        },
        () => undefined,
      );
      building.catch(() => undefined);
      const bakes = () => own.p.runscContainers().filter((c) => c.startsWith('bake-'));
      for (let i = 0; bakes().length === 0; i++) {
        assert.ok(i < 600, 'the bake did not start within 60 s');
        await new Promise((r) => setTimeout(r, 100));
      }
      await own.p.close();
      // Before the fixture's own sweep: close() itself stopped and removed the bake.
      assert.deepEqual(own.p.runscContainers(), []);
      assert.deepEqual(
        readdirSync(join(own.p.home, 'sandboxes')).filter((d) => d.startsWith('bake-')),
        [],
      );
      await assert.rejects(building);
    } finally {
      await own.stop();
    }
  });
});
