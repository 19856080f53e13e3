/** Image layers applied to a directory: order, whiteouts, and nothing written outside the root. */
import assert from 'node:assert/strict';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { applyLayer } from '../../src/templates/layer-extract';
import { openImage, unpackImage } from '../../src/templates/oci-image';
import { dockerSave, ociLayout, tarImage, tarOf } from '../../../../test/images';

let tmp: string;
before(() => {
  tmp = mkdtempSync('/tmp/wlx-');
});
after(() => rmSync(tmp, { recursive: true, force: true }));

function mkdirp(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}
function fresh(name: string): { root: string; outside: string } {
  const dir = join(tmp, name);
  const root = join(dir, 'root');
  mkdirp(root);
  return { root, outside: dir };
}
const apply = (root: string, buf: Buffer) => applyLayer(root, Readable.from([buf]));

async function rejects(p: Promise<unknown>, code = 'INVALID_IMAGE'): Promise<void> {
  await assert.rejects(p, (err: { code?: string }) => err.code === code);
}

describe('layer extraction', () => {
  test('applies files, dirs, symlinks and hard links; gzip too', async () => {
    const { root } = fresh('basic');
    const layer = await tarOf([
      { name: './etc/' },
      { name: './etc/hello', content: 'hi\n', mode: 0o4755 },
      { name: './etc/link', type: 'symlink', linkname: '/etc/hello' },
      { name: './etc/hard', type: 'link', linkname: './etc/hello' },
      { name: 'usr/bin/tool', content: 'x' },
    ]);
    const stats = await apply(root, gzipSync(layer));
    assert.equal(readFileSync(join(root, 'etc/hello'), 'utf8'), 'hi\n');
    assert.equal(lstatSync(join(root, 'etc/hello')).mode & 0o7777, 0o4755);
    assert.equal(readlinkSync(join(root, 'etc/link')), '/etc/hello');
    assert.equal(lstatSync(join(root, 'etc/hard')).ino, lstatSync(join(root, 'etc/hello')).ino);
    assert.equal(readFileSync(join(root, 'usr/bin/tool'), 'utf8'), 'x');
    assert.match(stats.digest, /^sha256:[a-f0-9]{64}$/);
  });

  test('whiteouts remove lower entries; an opaque dir keeps only its own layer', async () => {
    const { root } = fresh('wh');
    await apply(
      root,
      await tarOf([
        { name: 'a/' },
        { name: 'a/old', content: '1' },
        { name: 'a/keep', content: '1' },
        { name: 'b/' },
        { name: 'b/x', content: '1' },
        { name: 'b/sub/' },
        { name: 'b/sub/y', content: '1' },
      ]),
    );
    await apply(
      root,
      await tarOf([
        { name: 'a/.wh.old', content: '' },
        { name: 'b/' },
        { name: 'b/new', content: '2' },
        { name: 'b/.wh..wh..opq', content: '' },
      ]),
    );
    assert.ok(!existsSync(join(root, 'a/old')));
    assert.ok(existsSync(join(root, 'a/keep')));
    assert.ok(!existsSync(join(root, 'a/.wh.old')));
    assert.ok(!existsSync(join(root, 'b/x')));
    assert.ok(!existsSync(join(root, 'b/sub')));
    assert.equal(readFileSync(join(root, 'b/new'), 'utf8'), '2');
    assert.ok(!existsSync(join(root, 'b/.wh..wh..opq')));
  });

  test('refuses ../ entries and writes nothing outside', async () => {
    const { root, outside } = fresh('dotdot');
    await rejects(apply(root, await tarOf([{ name: '../escape', content: 'x' }])));
    await rejects(apply(root, await tarOf([{ name: 'a/../../escape', content: 'x' }])));
    await rejects(
      apply(root, await tarOf([{ name: 'h', type: 'link', linkname: '../../etc/passwd' }])),
    );
    assert.ok(!existsSync(join(outside, 'escape')));
  });

  test('absolute names and absolute symlinks stay inside the root', async () => {
    const { root, outside } = fresh('abs');
    await apply(
      root,
      await tarOf([
        { name: '/abs-file', content: 'in' },
        // A symlink to the directory outside, then a file written "through" it.
        { name: 'out', type: 'symlink', linkname: outside },
        { name: 'out/planted', content: 'x' },
        { name: 'up', type: 'symlink', linkname: '../../..' },
        { name: 'up/planted2', content: 'x' },
      ]),
    );
    assert.equal(readFileSync(join(root, 'abs-file'), 'utf8'), 'in');
    assert.ok(!existsSync(join(outside, 'planted')));
    assert.ok(!existsSync(join(outside, 'planted2')));
    assert.ok(!existsSync('/planted2'));
    // Resolved as if the root were /: the files land inside it.
    assert.ok(existsSync(join(root, outside.slice(1), 'planted')));
    assert.ok(existsSync(join(root, 'planted2')));
    // A later regular file replaces a symlink instead of writing through it.
    await writeFile(join(outside, 'victim'), 'safe');
    await apply(
      root,
      await tarOf([
        { name: 'v', type: 'symlink', linkname: join(outside, 'victim') },
        { name: 'v', content: 'overwritten?' },
      ]),
    );
    assert.equal(readFileSync(join(outside, 'victim'), 'utf8'), 'safe');
    assert.equal(readFileSync(join(root, 'v'), 'utf8'), 'overwritten?');
  });

  test('malformed input is a typed error', async () => {
    const { root } = fresh('bad');
    await rejects(apply(root, Buffer.from('this is not a tar archive at all'.repeat(40))));
    const good = await tarOf([{ name: 'f', content: 'x'.repeat(5000) }]);
    await rejects(apply(root, good.subarray(0, 1000)));
    await rejects(apply(root, Buffer.from([0x1f, 0x8b, 1, 2, 3, 4, 5, 6, 7, 8])));
  });
});

describe('image formats', () => {
  test('OCI layout and docker save give layers in order and the image defaults', async () => {
    const l1 = await tarOf([{ name: 'etc/' }, { name: 'etc/os', content: 'one' }]);
    const l2 = await tarOf([{ name: 'etc/os', content: 'two' }]);
    const config = { Env: ['A=1', 'PATH=/bin'], WorkingDir: '/w', User: '1000', Cmd: ['sh'] };
    for (const [name, dir] of [
      ['oci', ociLayout(join(tmp, 'oci'), [l1, l2], config, { gzip: true })],
      ['docker', dockerSave(join(tmp, 'docker'), [l1, l2], config)],
    ] as const) {
      const tarFile = tarImage(dir, join(tmp, `${name}.tar`));
      for (const source of [dir, tarFile]) {
        const img = await openImage(source, join(tmp, `scratch-${name}-${source === dir}`));
        assert.equal(img.format, name);
        assert.deepEqual(img.defaults, {
          env: { A: '1', PATH: '/bin' },
          workdir: '/w',
          user: '1000',
          start: ['sh'],
        });
        const { root } = fresh(`img-${name}`);
        const layers = await unpackImage(img, root, () => undefined);
        assert.equal(layers.length, 2);
        assert.equal(readFileSync(join(root, 'etc/os'), 'utf8'), 'two');
      }
    }
  });

  test('missing manifests, bad digests and escaping paths are refused', async () => {
    const empty = join(tmp, 'empty');
    mkdirp(empty);
    await rejects(openImage(empty, join(tmp, 's1')));
    await rejects(openImage(join(tmp, 'nope.tar'), join(tmp, 's2')));
    const junk = join(tmp, 'junk.tar');
    await writeFile(junk, 'garbage'.repeat(200));
    await rejects(openImage(junk, join(tmp, 's3')));
    // Docker manifest naming a layer outside the image.
    const d = join(tmp, 'escape-docker');
    dockerSave(d, [await tarOf([{ name: 'f', content: 'x' }])], {});
    await writeFile(
      join(d, 'manifest.json'),
      JSON.stringify([{ Config: 'config.json', Layers: ['../../../etc/passwd'] }]),
    );
    await rejects(openImage(d, join(tmp, 's4')));
    // OCI layer whose bytes do not match the digest.
    const o = ociLayout(join(tmp, 'tampered'), [await tarOf([{ name: 'f', content: 'x' }])], {});
    const img = await openImage(o, join(tmp, 's5'));
    const layer = img.layers[0];
    assert.ok(layer);
    await writeFile(layer.path, await tarOf([{ name: 'f', content: 'evil' }]));
    const { root } = fresh('tampered-root');
    await rejects(unpackImage(img, root, () => undefined));
  });
});
