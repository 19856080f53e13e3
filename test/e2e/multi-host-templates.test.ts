/**
 * Templates built once and fetched by other hosts: an agent with its own,
 * empty templates directory and the shared S3 store builds nothing at start;
 * the first sandbox placed on it makes the control plane's host publish the
 * `base` template into the store and the agent fetch it, and the sandbox
 * runs there from the fetched root and snapshot.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { removeHomes, startAgentProcess, stopAgent, type AgentProcess } from '../agents';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { hostOf } from '../hosts';
import { dockerSave, tarImage, tarOf } from '../images';
import { startS3, type TestS3 } from '../s3';
import { outcome } from '../templates';
import { waitFor } from '../wait';
import type { S3SnapshotStore } from '../../packages/host-agent/src/snapshots';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('templates shared through the store', () => {
  let p: TestPlatform;
  let s3: TestS3;
  let agent: AgentProcess | undefined;
  const templatesDir = mkdtempSync('/tmp/wag-templates-');
  const homes = [templatesDir];
  const host = (id: string) => p.json<Json>(`/v1/hosts/${id}`);
  const record = (name: string) =>
    JSON.parse(readFileSync(join(templatesDir, name, 'template.json'), 'utf8')) as Json;
  const bucket = () => (p.host.snapshotStore as S3SnapshotStore).keys();
  const manifest = (image: string) => `warren/manifests/${image}.json`;
  /** Creates a sandbox of a template on host_t1, reads one file in it, deletes it. */
  const readOnT1 = async (template: string, path: string) => {
    const sbx = await createSandbox(p, { template, host_id: 'host_t1' });
    try {
      assert.equal(await hostOf(p, sbx), 'host_t1');
      const res = await p.api(`/v1/sandboxes/${sbx}/files?path=${encodeURIComponent(path)}`);
      assert.equal(res.status, 200);
      return await res.text();
    } finally {
      await p.api(`/v1/sandboxes/${sbx}`, { method: 'DELETE' });
    }
  };
  const rebuild = (name: string) =>
    p.api(`/v1/templates/${name}/rebuild`, { method: 'POST' }).then(outcome);

  before(async () => {
    s3 = await startS3();
    p = await startTestPlatform({ snapshotStore: { kind: 's3', ...s3.config } });
    const { token } = await p.json<Json>('/v1/hosts/join-tokens', { method: 'POST', json: {} });
    agent = await startAgentProcess({
      controlPlane: p.url,
      hostId: 'host_t1',
      token,
      s3: s3.config,
      templatesDir,
    });
    homes.push(agent.home);
    await waitFor(async () => (await host('host_t1')).connected, { what: 'host_t1 connected' });
  });

  after(async () => {
    if (agent) await stopAgent(agent);
    removeHomes(homes);
    await p?.stop();
    await s3?.stop();
  });

  it('an agent without a template fetches it for the first sandbox placed on it', async () => {
    // With the shared store the agent built nothing at start.
    assert.deepEqual((await host('host_t1')).templates, []);
    assert.equal(existsSync(join(templatesDir, 'base')), false);
    const sbx = await createSandbox(p, { template: 'base', host_id: 'host_t1' });
    try {
      assert.equal(await hostOf(p, sbx), 'host_t1');
      const r = await exec(p, sbx, { cmd: 'cat', args: ['/etc/debian_version'] });
      assert.equal(r.exit_code, 0);
      assert.match(r.stdout, /^12\./);
      // Its own copy: root and snapshot in its directory, the record naming the image it came from.
      const rec = JSON.parse(readFileSync(join(templatesDir, 'base/template.json'), 'utf8'));
      assert.equal(rec.state, 'ready');
      assert.equal(rec.rootfs, join(templatesDir, 'base/rootfs'));
      assert.match(rec.published, /^template-base-[0-9a-f]{16}$/);
      assert.ok(statSync(join(templatesDir, 'base/rootfs/usr/bin/python3')).isFile());
      assert.ok(readdirSync(join(templatesDir, 'base/snapshot')).length > 0);
      // The image is in the bucket; neither host keeps the root's tar in its cache.
      const store = p.host.snapshotStore as S3SnapshotStore;
      const keys = await store.keys();
      assert.ok(keys.includes(`warren/manifests/${rec.published}.json`), keys.join(' '));
      assert.equal(await store.cache.has(rec.published), false);
      // Its heartbeats now report the template, and placement records why it went there.
      await waitFor(async () => (await host('host_t1')).templates.includes('base'), {
        what: 'host_t1 reports base',
      });
      const events = (await p.json<Json>(`/v1/sandboxes/${sbx}/events`)).items as Json[];
      assert.ok(
        events.some((e) =>
          /placed on host_t1: .*fetches template base from the shared store/.test(e.cause),
        ),
        JSON.stringify(events),
      );
    } finally {
      await p.api(`/v1/sandboxes/${sbx}`, { method: 'DELETE' });
    }
    // A second sandbox there uses the copy it has: the record is not written again.
    const before = statSync(join(templatesDir, 'base/template.json')).mtimeMs;
    const again = await createSandbox(p, { template: 'base', host_id: 'host_t1' });
    try {
      assert.equal((await exec(p, again, { cmd: 'true' })).exit_code, 0);
      assert.equal(statSync(join(templatesDir, 'base/template.json')).mtimeMs, before);
    } finally {
      await p.api(`/v1/sandboxes/${again}`, { method: 'DELETE' });
    }
  });

  it('a rebuild of the root reaches a host that fetched the previous build', async () => {
    const name = `shared-${Date.now().toString(36)}`;
    const built = await p
      .api('/v1/templates', {
        method: 'POST',
        json: { name, base: 'base', steps: [{ run: 'date +%s%N > /build-mark' }] },
      })
      .then(outcome);
    assert.equal(built.done?.name, name, JSON.stringify(built));
    try {
      const first = await readOnT1(name, '/build-mark');
      const before = record(name).published as string;
      const r = await rebuild(name);
      assert.equal(r.done?.name, name, JSON.stringify(r));
      assert.ok(
        r.logs.some((l) => l.includes('host host_t1: its copy of the previous build removed')),
      );
      // The old copy is gone from host_t1 and the old image from the bucket.
      assert.equal(existsSync(join(templatesDir, name)), false);
      assert.equal((await bucket()).includes(manifest(before)), false);
      // The next sandbox there fetches the new build: its root is the one built again.
      const second = await readOnT1(name, '/build-mark');
      assert.notEqual(second, first);
      assert.notEqual(record(name).published, before);
    } finally {
      assert.equal((await p.api(`/v1/templates/${name}`, { method: 'DELETE' })).status, 204);
    }
    assert.equal(existsSync(join(templatesDir, name)), false);
  });

  it('a rebuild that bakes the snapshot again gives the fetched copy the new snapshot, root kept', async () => {
    const name = `baked-${Date.now().toString(36)}`;
    const tmp = mkdtempSync('/tmp/wag-image-');
    try {
      const layer = await tarOf([{ name: 'marker', content: 'from the image\n' }]);
      const image = tarImage(dockerSave(join(tmp, 'img'), [layer], {}), join(tmp, 'img.tar'));
      const up = await p
        .api(`/v1/templates/${name}/image?default_memory_mb=128`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-tar' },
          body: readFileSync(image),
        })
        .then(outcome);
      assert.equal(up.done?.name, name, JSON.stringify(up));
      assert.equal(await readOnT1(name, '/marker'), 'from the image\n');
      const before = record(name);
      const root = statSync(join(templatesDir, name, 'rootfs')).ino;
      const snapshot = statSync(join(templatesDir, name, 'snapshot')).ino;
      const r = await rebuild(name);
      assert.equal(r.done?.name, name, JSON.stringify(r));
      assert.ok(
        r.logs.some((l) => l.includes('host host_t1: fetched the new snapshot')),
        r.logs.join('\n'),
      );
      const after = record(name);
      assert.notEqual(after.published, before.published);
      assert.notEqual(after.built_at, before.built_at);
      assert.equal(statSync(join(templatesDir, name, 'rootfs')).ino, root);
      assert.notEqual(statSync(join(templatesDir, name, 'snapshot')).ino, snapshot);
      const keys = await bucket();
      assert.ok(keys.includes(manifest(after.published)));
      assert.equal(keys.includes(manifest(before.published)), false);
      assert.deepEqual(readdirSync(join(templatesDir, '.fetch')), []);
      // A sandbox there restores from the new snapshot.
      assert.equal(await readOnT1(name, '/marker'), 'from the image\n');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
      assert.equal((await p.api(`/v1/templates/${name}`, { method: 'DELETE' })).status, 204);
    }
    assert.equal(existsSync(join(templatesDir, name)), false);
  });

  it('a fetch of an image the store lacks fails with a typed error and leaves nothing', async () => {
    const remote = p.context.host as unknown as {
      host(id: string): { templates: { fetch(n: string, i: string): Promise<unknown> } };
    };
    await assert.rejects(remote.host('host_t1').templates.fetch('other', 'template-other-00'), {
      code: 'SNAPSHOT_NOT_FOUND',
    });
    assert.deepEqual(
      readdirSync(templatesDir).filter((n) => n === 'other'),
      [],
    );
    assert.deepEqual(readdirSync(join(templatesDir, '.fetch')), []);
  });
});
