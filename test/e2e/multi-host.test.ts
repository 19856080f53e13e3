/**
 * Several hosts on one machine: a control plane (with its own in-process
 * agent) and two `warren agent` processes that joined it, each with its own
 * home and gVisor runtime root, reached over the HostApi transport. Placement
 * spreads sandboxes over the three, exec and files reach a sandbox through
 * its agent, a drained host takes none and its persistent sandboxes move, a
 * killed agent's sandboxes are lost after its lease (persistent ones come
 * back elsewhere: from a snapshot, or from the hibernation image in the
 * store), and a killed agent is fenced when it comes back: it destroys what
 * it held and rejoins empty. (Frozen agents: multi-host-cut.test.ts.)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import {
  containers,
  removeHomes,
  selfSignedCert,
  startAgentProcess,
  stopAgent,
  type AgentProcess,
} from '../agents';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { startS3, type TestS3 } from '../s3';
import {
  assertFilesAndProcess,
  hostOf as hostOfIn,
  persistentOn,
  sleepWithProcess,
  startProcess,
} from '../hosts';
import { waitFor } from '../wait';

const LEASE_S = 3;

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('several hosts', () => {
  let p: TestPlatform;
  let s3: TestS3;
  const agents = new Map<string, AgentProcess>();
  const homes: string[] = [];
  const certDir = mkdtempSync('/tmp/wag-tls-');
  homes.push(certDir);
  // host_b1 serves its HostApi over HTTPS with a self-signed certificate the control plane trusts.
  const tls = selfSignedCert(certDir);

  async function startAgent(hostId: string, token?: string, home?: string, https = false) {
    const a = await startAgentProcess({
      controlPlane: p.url,
      hostId,
      token,
      home,
      tls: https ? tls : undefined,
      s3: s3.config,
    });
    if (!homes.includes(a.home)) homes.push(a.home);
    agents.set(hostId, a);
    return a;
  }

  const host = (id: string) => p.json<Json>(`/v1/hosts/${id}`);
  const hostOf = (id: string) => hostOfIn(p, id);
  const token = async () =>
    (await p.json<Json>('/v1/hosts/join-tokens', { method: 'POST', json: {} })).token as string;

  before(async () => {
    s3 = await startS3();
    p = await startTestPlatform({
      hostLeaseMs: LEASE_S * 1000,
      snapshotStore: { kind: 's3', ...s3.config },
      agentCaFile: tls.cert,
    });
    await startAgent('host_a1', await token());
    await startAgent('host_b1', await token(), undefined, true);
    await waitFor(
      async () => (await p.json<Json>('/v1/hosts')).hosts.every((h: Json) => h.connected),
      {
        timeoutMs: 20_000,
        what: 'every host connected',
      },
    );
  });

  after(async () => {
    for (const a of agents.values()) await stopAgent(a);
    removeHomes(homes);
    await p?.stop();
    await s3?.stop();
  });

  it('refuses a wrong or used join token, a spoofed host id, and non-admins', async () => {
    const bad = await p.api('/v1/hosts/join', {
      method: 'POST',
      token: null,
      json: { token: 'wjt_nope' },
    });
    assert.equal(bad.status, 401);
    assert.equal(((await bad.json()) as Json).error.code, 'JOIN_TOKEN_INVALID');
    const t = await token();
    const ok = await p.api('/v1/hosts/join', {
      method: 'POST',
      token: null,
      json: { token: t, host_id: 'host_x1' },
    });
    assert.equal(ok.status, 201);
    const joined = (await ok.json()) as Json;
    const again = await p.api('/v1/hosts/join', {
      method: 'POST',
      token: null,
      json: { token: t },
    });
    assert.equal(((await again.json()) as Json).error.code, 'JOIN_TOKEN_INVALID');
    // host_x1's credential does not speak for host_a1.
    const spoof = await p.api('/v1/hosts/host_a1/heartbeat', {
      method: 'POST',
      token: joined.credential,
      json: {
        epoch: 1,
        url: 'http://127.0.0.1:9',
        capacity: { memory_budget_mb: 1, memory_reserved_mb: 0, sandboxes: 0 },
        version: 'x',
        templates: [],
      },
    });
    assert.equal(spoof.status, 401);
    assert.equal(((await spoof.json()) as Json).error.code, 'UNAUTHORIZED');
    const unknown = await p.api('/v1/hosts/host_nope/drain', { method: 'POST' });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as Json).error.code, 'HOST_NOT_FOUND');
    const key = await p.json<Json>('/v1/keys', {
      method: 'POST',
      json: { name: 'writer', scopes: ['sandboxes:write', 'sandboxes:read'] },
    });
    const denied = await p.api('/v1/hosts', { token: key.key });
    assert.equal(denied.status, 403);
    assert.equal(((await denied.json()) as Json).error.code, 'MISSING_SCOPE');
    // The host that joined and never heartbeat is removed (it owns nothing).
    assert.equal((await p.api('/v1/hosts/host_x1', { method: 'DELETE' })).status, 204);
    assert.equal((await p.api('/v1/hosts/host_x1')).status, 404);
  });

  it('spreads sandboxes over the hosts and reaches each through its agent', async () => {
    const ids = [await createSandbox(p), await createSandbox(p), await createSandbox(p)];
    try {
      const on = await Promise.all(ids.map(hostOf));
      assert.deepEqual([...on].sort(), ['host_a1', 'host_b1', 'host_local']);
      for (const [i, id] of ids.entries()) {
        const r = await exec(p, id, {
          cmd: 'sh',
          args: ['-c', `echo hi from ${i}; hostname >/dev/null`],
        });
        assert.equal(r.stdout, `hi from ${i}\n`);
        const events = await p.json<Json>(`/v1/sandboxes/${id}/events`);
        assert.ok(
          events.items.some((e: Json) => e.cause.includes(`placed on ${on[i]}`)),
          JSON.stringify(events),
        );
      }
      const remote = ids[on.indexOf('host_a1')]!;
      // It runs in that agent's own runtime.
      assert.ok(containers(agents.get('host_a1')!.home).includes(remote));
      const body = 'x'.repeat(300_000);
      const put = await p.api(`/v1/sandboxes/${remote}/files?path=/tmp/f.txt`, {
        method: 'PUT',
        body,
      });
      assert.equal(put.status, 200, await put.text());
      const got = await p.api(`/v1/sandboxes/${remote}/files?path=/tmp/f.txt`);
      assert.equal(await got.text(), body);
      const hosts = (await p.json<Json>('/v1/hosts')).hosts as Json[];
      assert.match(hosts.find((h) => h.id === 'host_b1').url, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.deepEqual(
        hosts.map((h) => [h.id, h.state, h.sandboxes]),
        [
          ['host_local', 'active', 1],
          ['host_a1', 'active', 1],
          ['host_b1', 'active', 1],
        ],
      );
    } finally {
      for (const id of ids) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
    // The runtime's teardown finishes in the background.
    await waitFor(() => containers(agents.get('host_a1')!.home).length === 0, {
      what: "host_a1's runtime to hold nothing",
    });
  });

  it("spreads a fork-tree's children over the hosts, each with the parent's processes", async () => {
    const parent = await createSandbox(p, { template: 'base', host_id: 'host_a1' });
    let children: string[] = [];
    try {
      const pid = await startProcess(p, parent);
      const tree = await p.json<Json>(`/v1/sandboxes/${parent}/fork-tree`, {
        method: 'POST',
        json: { count: 3 },
      });
      children = tree.children.map((c: Json) => c.id as string);
      const on = await Promise.all(children.map(hostOf));
      // Placement counts the parent: the two hosts without it get a child each first.
      assert.ok(on.includes('host_local') && on.includes('host_b1'), on.join());
      for (const c of children) await assertFilesAndProcess(p, c, pid);
    } finally {
      for (const id of [parent, ...children])
        await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });

  it('restores a snapshot taken on one host on another, where an admin places it', async () => {
    const parent = await createSandbox(p, { template: 'base', host_id: 'host_local' });
    let child = '';
    try {
      assert.equal(await hostOf(parent), 'host_local');
      await exec(p, parent, { cmd: 'sh', args: ['-c', 'echo made on host_local > /tmp/origin'] });
      const snap = await p.json<Json>(`/v1/sandboxes/${parent}/snapshots`, { method: 'POST' });
      const key = await p.json<Json>('/v1/keys', {
        method: 'POST',
        json: { name: 'no-hints', scopes: ['sandboxes:write', 'sandboxes:read'] },
      });
      const refused = await p.api('/v1/sandboxes', {
        method: 'POST',
        token: key.key,
        json: { from_snapshot: snap.id, host_id: 'host_a1' },
      });
      assert.equal(refused.status, 403);
      const noHost = await p.api('/v1/sandboxes', {
        method: 'POST',
        json: { from_snapshot: snap.id, host_id: 'host_nope' },
      });
      assert.equal(noHost.status, 404);
      assert.equal(((await noHost.json()) as Json).error.code, 'HOST_NOT_FOUND');
      child = await createSandbox(p, { from_snapshot: snap.id, host_id: 'host_a1' });
      assert.equal(await hostOf(child), 'host_a1');
      assert.equal(
        (await exec(p, child, { cmd: 'cat', args: ['/tmp/origin'] })).stdout,
        'made on host_local\n',
      );
      const events = await p.json<Json>(`/v1/sandboxes/${child}/events`);
      assert.ok(
        events.items.some((e: Json) => /placed on host_a1: asked for by an admin/.test(e.cause)),
      );
      await p.api(`/v1/snapshots/${snap.id}`, { method: 'DELETE' });
    } finally {
      await p.api(`/v1/sandboxes/${parent}`, { method: 'DELETE' });
      if (child) await p.api(`/v1/sandboxes/${child}`, { method: 'DELETE' });
    }
  });

  it('moves persistent sandboxes off a drained host and places nothing there', async () => {
    const mover = await createSandbox(p, persistentOn('host_b1'));
    await exec(p, mover, {
      cmd: 'sh',
      args: ['-c', 'echo moved > /tmp/m; sleep 1000 & echo $! > /tmp/pid'],
    });
    const pid = (await exec(p, mover, { cmd: 'cat', args: ['/tmp/pid'] })).stdout.trim();
    // A hibernated one moves too, and sleeps on where it lands.
    const sleeper = await createSandbox(p, persistentOn('host_b1'));
    const sleeperPid = await sleepWithProcess(p, sleeper);
    const oldImage = (await p.context.store.getSandboxById(sleeper))!.image_id;
    const drained = await p.json<Json>('/v1/hosts/host_b1/drain', { method: 'POST' });
    assert.equal(drained.state, 'draining');
    let reason = '';
    await waitFor(
      async () =>
        /: 2 sandboxes and 0 databases moved, 0 sandboxes left on it$/.test(
          (reason = (await host('host_b1')).state_reason),
        ),
      { timeoutMs: 60_000, what: () => `the drain done (${reason})` },
    );
    assert.notEqual(await hostOf(mover), 'host_b1');
    // Its files and its processes came along.
    assert.equal((await exec(p, mover, { cmd: 'cat', args: ['/tmp/m'] })).stdout, 'moved\n');
    assert.equal(
      (await exec(p, mover, { cmd: 'sh', args: ['-c', `kill -0 ${pid}`] })).exit_code,
      0,
    );
    const events = (await p.json<Json>(`/v1/sandboxes/${mover}/events`)).items as Json[];
    assert.match(
      events.at(-1).cause,
      /^moved from host host_b1 \(drained\); placed on host_(local|a1)/,
    );
    await p.api(`/v1/sandboxes/${mover}`, { method: 'DELETE' });
    assert.notEqual(await hostOf(sleeper), 'host_b1');
    assert.equal((await p.json<Json>(`/v1/sandboxes/${sleeper}`)).state, 'hibernated');
    // It went from its image in the store, and a new image of it is there now.
    const newImage = (await p.context.store.getSandboxById(sleeper))!.image_id;
    assert.match(newImage ?? '', /^snap_/);
    assert.notEqual(newImage, oldImage);
    await assertFilesAndProcess(p, sleeper, sleeperPid);
    await p.api(`/v1/sandboxes/${sleeper}`, { method: 'DELETE' });
    const ids = [await createSandbox(p), await createSandbox(p), await createSandbox(p)];
    try {
      const on = await Promise.all(ids.map(hostOf));
      assert.ok(!on.includes('host_b1'), on.join());
      assert.deepEqual(new Set(on), new Set(['host_local', 'host_a1']));
    } finally {
      for (const id of ids) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
    // A drained host with nothing on it can be removed; its agent is then refused.
    assert.equal((await p.api('/v1/hosts/host_b1', { method: 'DELETE' })).status, 204);
    const b = agents.get('host_b1')!;
    await waitFor(async () => /heartbeat failed: not the credential of host host_b1/.test(b.log), {
      timeoutMs: 10_000,
      what: 'the removed agent refused',
    });
    b.child.kill('SIGTERM');
    await new Promise((r) => b.child.once('exit', r));
  });

  it('loses a killed agent after its lease, restores its persistent sandbox elsewhere, and fences it when it comes back', async () => {
    const a = agents.get('host_a1')!;
    const id = await createSandbox(p);
    const other = await createSandbox(p);
    const on = [await hostOf(id), await hostOf(other)];
    const onA = on[0] === 'host_a1' ? id : other;
    const onLocal = onA === id ? other : id;
    // A persistent sandbox with a snapshot: it comes back from it on another host.
    const kept = await createSandbox(p, { template: 'base', persistent: true, host_id: 'host_a1' });
    // A hibernated persistent one: its image is in the store, it wakes on another host.
    const sleeper = await createSandbox(p, persistentOn('host_a1'));
    try {
      assert.deepEqual(new Set(on), new Set(['host_a1', 'host_local']));
      await exec(p, kept, { cmd: 'sh', args: ['-c', 'echo kept > /tmp/kept'] });
      const snap = await p.json<Json>(`/v1/sandboxes/${kept}/snapshots`, { method: 'POST' });
      const pid = await sleepWithProcess(p, sleeper);
      a.child.kill('SIGKILL');
      await new Promise((r) => a.child.once('exit', r));
      // Its sandbox goes on running in the runtime: nobody can reach it.
      assert.ok(containers(a.home).includes(onA));
      const started = Date.now();
      await waitFor(async () => (await host('host_a1')).state === 'lost', {
        timeoutMs: 20_000,
        what: 'host lost',
      });
      const lostAfter = (Date.now() - started) / 1000;
      assert.ok(lostAfter < LEASE_S + 3, `lost after ${lostAfter} s`);
      const h = await host('host_a1');
      assert.equal(h.epoch, 2);
      assert.match(h.state_reason, /^lease expired: no heartbeat for \d+\.\d s$/);
      const sbx = await waitFor(
        async () => {
          const s = await p.json<Json>(`/v1/sandboxes/${onA}`);
          return s.state === 'stopped' && s;
        },
        { what: 'its sandbox recorded stopped' },
      );
      assert.match(sbx.stop_reason, /^host host_a1 lost \(lease expired/);
      const run = await p.api(`/v1/sandboxes/${onA}/exec`, {
        method: 'POST',
        json: { cmd: 'true' },
      });
      assert.equal(run.status, 409);
      // The rest of the install carries on.
      assert.equal((await exec(p, onLocal, { cmd: 'echo', args: ['still'] })).stdout, 'still\n');
      // Recovery goes through the lost host's sandboxes one by one.
      await waitFor(async () => (await hostOf(kept)) === 'host_local', {
        what: 'restored elsewhere',
      });
      assert.equal((await p.json<Json>(`/v1/sandboxes/${kept}`)).state, 'running');
      assert.equal((await exec(p, kept, { cmd: 'cat', args: ['/tmp/kept'] })).stdout, 'kept\n');
      const events = (await p.json<Json>(`/v1/sandboxes/${kept}/events`)).items as Json[];
      assert.match(
        events.at(-1).cause,
        new RegExp(
          `^restored from snapshot ${snap.id} \\(.*\\): host host_a1 lost \\(lease expired.*placed on host_local`,
        ),
      );
      await waitFor(async () => (await hostOf(sleeper)) === 'host_local', {
        what: 'the hibernated one woken elsewhere',
      });
      assert.equal((await p.json<Json>(`/v1/sandboxes/${sleeper}`)).state, 'running');
      await assertFilesAndProcess(p, sleeper, pid);
      const woken = (await p.json<Json>(`/v1/sandboxes/${sleeper}/events`)).items as Json[];
      assert.match(
        woken.at(-1).cause,
        /^woken from its hibernation image: host host_a1 lost \(lease expired.*placed on host_local/,
      );
      assert.equal((await p.context.store.getSandboxById(sleeper))!.image_id, null);
      // Restarted on its home, it is fenced, destroys what it held, and rejoins empty.
      await startAgent('host_a1', undefined, a.home);
      await waitFor(async () => (await host('host_a1')).state === 'active', {
        timeoutMs: 20_000,
        what: 'rejoined',
      });
      const back = await host('host_a1');
      assert.deepEqual([back.epoch, back.state_reason, back.sandboxes], [2, 'rejoined empty', 0]);
      assert.deepEqual(containers(a.home), []);
      assert.match(agents.get('host_a1')!.log, /fenced .* destroying every sandbox of epoch 1/);
      // The restored copy still answers where it is: the old one is gone, nothing runs twice.
      assert.equal((await exec(p, kept, { cmd: 'cat', args: ['/tmp/kept'] })).stdout, 'kept\n');
      await p.api(`/v1/snapshots/${snap.id}`, { method: 'DELETE' });
    } finally {
      await p.api(`/v1/sandboxes/${onLocal}`, { method: 'DELETE' });
      await p.api(`/v1/sandboxes/${onA}`, { method: 'DELETE' });
      await p.api(`/v1/sandboxes/${kept}`, { method: 'DELETE' });
      await p.api(`/v1/sandboxes/${sleeper}`, { method: 'DELETE' });
    }
  });
});
