/**
 * Several hosts: placement with 1,000 simulated hosts in the store (against
 * the scoring alone, in memory); create → first exec through a `warren
 * agent` process against the control plane's in-process agent; the first
 * sandbox on a host that lacks its template (published and fetched through
 * the S3 store) against a local copy of the root; a snapshot
 * restored on another host (fetched from the S3 store) against the same
 * restore on the host that took it; a hibernate whose image goes into the
 * store against one kept on its host; and how long after an agent's SIGKILL
 * its sandboxes are recorded lost (lease 3 s) and its hibernated persistent
 * sandbox answers on another host.
 * Run: node --import tsx bench/hosts.ts (part of `npm run bench`).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { HostApi } from '@warren/protocol';
import { removeHomes, startAgentProcess, stopAgent } from '../test/agents';
import { joinFakeHost } from '../test/fake-hosts';
import { TEMPLATES_DIR, exec, startTestPlatform } from '../test/fixture';
import { startS3 } from '../test/s3';
import { waitFor } from '../test/wait';
import { place, type PlacementCandidate } from '../packages/server/src/hosts/placement';
import { now, printTable, timed, type Row } from './stats';

const RUNS = Number(process.env.BENCH_HOSTS_RUNS ?? 10);
const HOSTS = 1000;
const BASE_ROOT = join(TEMPLATES_DIR, 'base/rootfs');
const rows: Row[] = [];

const s3 = await startS3();
const p = await startTestPlatform({
  hostLeaseMs: 3000,
  snapshotStore: { kind: 's3', ...s3.config },
});
const homes: string[] = [];
const agents: Awaited<ReturnType<typeof startAgentProcess>>[] = [];
try {
  // ---- placement among 1,000 hosts: the store read and the scoring ----
  const hosts = p.context.hosts;
  const capacity = {
    memory_budget_mb: 16384,
    memory_reserved_mb: 0,
    sandboxes: 0,
    memory_used_mb: 0,
  };
  const candidates: PlacementCandidate[] = [];
  for (let i = 0; i < HOSTS; i++) {
    const id = `host_sim${String(i).padStart(4, '0')}`;
    // Connected as far as the router knows: placement only reads, it never calls them.
    await joinFakeHost(hosts, { id, close: async () => undefined } as unknown as HostApi, {
      capacity: { ...capacity, memory_used_mb: i % 97 },
      templates: ['base'],
      version: 'sim',
      reason: 'simulated',
    });
    candidates.push({
      id,
      state: 'active',
      connected: true,
      capacity,
      templates: ['base'],
      sandboxes: i % 7,
    });
  }
  const decide: number[] = [];
  const score: number[] = [];
  for (let i = 0; i < 50; i++) {
    decide.push((await timed(() => hosts.place({ template: 'base', memoryMb: 512 })))[0]);
    const t = now();
    place(candidates, { template: 'base', memoryMb: 512 });
    score.push(now() - t);
  }
  rows.push({
    name: `placement, ${HOSTS} hosts in the store`,
    unit: 'ms',
    warren: decide,
    direct: score,
    directName: 'scoring alone (in memory)',
  });
  for (let i = 0; i < HOSTS; i++) {
    const id = `host_sim${String(i).padStart(4, '0')}`;
    await hosts.router.disconnect(id);
    await hosts.queries.remove(id);
  }

  // ---- a real agent process ----
  const token = (
    await p.json<{ token: string }>('/v1/hosts/join-tokens', { method: 'POST', json: {} })
  ).token;
  const agent = await startAgentProcess({
    controlPlane: p.url,
    hostId: 'host_bench',
    token,
    s3: s3.config,
  });
  agents.push(agent);
  homes.push(agent.home);
  await waitFor(
    async () => (await p.json<{ connected: boolean }>('/v1/hosts/host_bench')).connected,
    { what: 'agent connected' },
  );

  const createExec = async (hostId: string) => {
    const [ms, id] = await timed(async () => {
      const s = await p.json<{ id: string }>('/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base', host_id: hostId },
      });
      await exec(p, s.id, { cmd: 'true' });
      return s.id;
    });
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    return ms;
  };
  const remote: number[] = [];
  const local: number[] = [];
  for (let i = 0; i < RUNS + 1; i++) {
    const r = await createExec('host_bench');
    const l = await createExec('host_local');
    await p.host.settle();
    if (i > 0) {
      remote.push(r);
      local.push(l);
    }
  }
  rows.push({
    name: 'create → first exec, remote agent',
    unit: 'ms',
    warren: remote,
    direct: local,
    directName: 'in-process agent',
  });

  // ---- a template fetched by a host that lacks it ----
  // Each run a new agent with an empty templates directory, and the image
  // deleted from the store before it: publish, upload, download, unpack, then
  // create → exec. Direct: the root copied through a tar pipe on this disk,
  // then create → exec on a host that has the template.
  const fetched: number[] = [];
  const copied: number[] = [];
  for (let i = 0; i < Math.max(3, Math.floor(RUNS / 3)); i++) {
    const hostId = `host_fetch${i}`;
    const templatesDir = mkdtempSync('/tmp/wag-templates-');
    homes.push(templatesDir);
    const fresh = await startAgentProcess({
      controlPlane: p.url,
      hostId,
      token: (
        await p.json<{ token: string }>('/v1/hosts/join-tokens', { method: 'POST', json: {} })
      ).token,
      s3: s3.config,
      templatesDir,
    });
    agents.push(fresh);
    homes.push(fresh.home);
    await waitFor(
      async () => (await p.json<{ connected: boolean }>(`/v1/hosts/${hostId}`)).connected,
      { what: `${hostId} connected` },
    );
    fetched.push(await createExec(hostId));
    const rec = JSON.parse(readFileSync(join(templatesDir, 'base/template.json'), 'utf8'));
    await p.host.snapshotStore.delete(rec.published as string);
    await stopAgent(fresh);
    await p.api(`/v1/hosts/${hostId}`, { method: 'DELETE' });
    const copy = mkdtempSync('/tmp/wag-copy-');
    homes.push(copy);
    const t = now();
    execFileSync('sh', ['-c', 'tar -C "$1" -cf - . | tar -C "$2" -xpf -', 'sh', BASE_ROOT, copy]);
    copied.push(now() - t + (await createExec('host_local')));
    rmSync(copy, { recursive: true, force: true });
  }
  rows.push({
    name: 'first sandbox on a host without its template (publish + fetch via S3)',
    unit: 'ms',
    warren: fetched,
    direct: copied,
    directName: 'root through a local tar pipe + create on a host with it',
  });

  // ---- a snapshot restored on another host ----
  const parent = (
    await p.json<{ id: string }>('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'base', host_id: 'host_local' },
    })
  ).id;
  await exec(p, parent, { cmd: 'sh', args: ['-c', 'head -c 20000000 /dev/urandom > /tmp/blob'] });
  const cross: number[] = [];
  const same: number[] = [];
  for (let i = 0; i < Math.max(3, Math.floor(RUNS / 2)); i++) {
    // A new snapshot each time: the other host has never fetched it.
    const snap = (
      await p.json<{ id: string }>(`/v1/sandboxes/${parent}/snapshots`, { method: 'POST' })
    ).id;
    for (const [hostId, into] of [
      ['host_bench', cross],
      ['host_local', same],
    ] as const) {
      const [ms, id] = await timed(async () => {
        const s = await p.json<{ id: string }>('/v1/sandboxes', {
          method: 'POST',
          json: { from_snapshot: snap, host_id: hostId },
        });
        await exec(p, s.id, { cmd: 'true' });
        return s.id;
      });
      into.push(ms);
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
    await p.api(`/v1/snapshots/${snap}`, { method: 'DELETE' });
  }
  await p.api(`/v1/sandboxes/${parent}`, { method: 'DELETE' });
  rows.push({
    name: 'snapshot → first exec, on another host (S3)',
    unit: 'ms',
    warren: cross,
    direct: same,
    directName: 'on the host that took it',
  });

  // ---- hibernate with the image put into the store, against one kept on its host ----
  const onBench = async (persistent: boolean) =>
    (
      await p.json<{ id: string }>('/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base', host_id: 'host_bench', persistent },
      })
    ).id;
  const hibernate = (id: string) =>
    timed(() => p.json(`/v1/sandboxes/${id}/hibernate`, { method: 'POST' }));
  const shared: number[] = [];
  const kept: number[] = [];
  for (let i = 0; i < Math.max(3, Math.floor(RUNS / 2)); i++) {
    for (const [persistent, into] of [
      [true, shared],
      [false, kept],
    ] as const) {
      const id = await onBench(persistent);
      into.push((await hibernate(id))[0]);
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  }
  rows.push({
    name: 'hibernate, image into the store (S3)',
    unit: 'ms',
    warren: shared,
    direct: kept,
    directName: 'image kept on its host only',
  });

  // ---- an agent's death: its sandboxes recorded lost, a hibernated one answering elsewhere ----
  const victim = await onBench(false);
  const sleeper = await onBench(true);
  await hibernate(sleeper);
  const t = now();
  agent.child.kill('SIGKILL');
  await waitFor(
    async () => (await p.json<{ state: string }>(`/v1/sandboxes/${victim}`)).state === 'stopped',
    { timeoutMs: 30_000, what: 'lost' },
  );
  const lostMs = now() - t;
  await waitFor(
    async () =>
      (await p.api(`/v1/sandboxes/${sleeper}/exec`, { method: 'POST', json: { cmd: 'true' } })).ok,
    { timeoutMs: 60_000, what: 'the hibernated sandbox answering elsewhere' },
  );
  const answeredMs = now() - t;
  await p.api(`/v1/sandboxes/${sleeper}`, { method: 'DELETE' });
  rows.push({
    name: 'agent SIGKILL → its sandboxes recorded lost (lease 3 s)',
    unit: 'ms',
    warren: [lostMs],
    direct: [3000],
    directName: 'the lease',
  });
  rows.push({
    name: 'agent SIGKILL → its hibernated persistent sandbox answers elsewhere',
    unit: 'ms',
    warren: [answeredMs],
    direct: [3000],
    directName: 'the lease',
  });
  printTable(rows);
} finally {
  for (const a of agents) await stopAgent(a);
  removeHomes(homes);
  await p.stop();
  await s3.stop();
}
