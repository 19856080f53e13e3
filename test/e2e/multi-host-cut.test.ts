/**
 * An agent cut off from the control plane and back: both ways of its
 * traffic go through a loopback proxy that the test cuts (open connections
 * destroyed, new ones dropped). Past its lease the host is lost and its
 * sandbox recorded stopped, like a dead host; when the network heals, its
 * next heartbeat is fenced, it destroys what it held and rejoins empty.
 * Then the same agent frozen (SIGSTOP) past its lease and thawed: fenced too.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  containers,
  removeHomes,
  startAgentProcess,
  stopAgent,
  type AgentProcess,
} from '../agents';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { startS3, type TestS3 } from '../s3';
import { startTcpProxy, type TcpProxy } from '../tcp-proxy';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

describe('an agent cut off from the control plane', () => {
  let p: TestPlatform;
  let s3: TestS3;
  let agent: AgentProcess | null = null;
  const proxies: TcpProxy[] = [];

  before(async () => {
    s3 = await startS3();
    p = await startTestPlatform({ hostLeaseMs: 3000 });
  });
  after(async () => {
    if (agent) {
      await stopAgent(agent);
      removeHomes([agent.home]);
    }
    for (const x of proxies) await x.close();
    await p?.stop();
    await s3?.stop();
  });

  it('is lost past its lease, then fenced and empty when it is back', async () => {
    const cp = new URL(p.url);
    const toControlPlane = await startTcpProxy({ host: cp.hostname, port: Number(cp.port) });
    const agentPort = await freePort();
    const toAgent = await startTcpProxy({ host: '127.0.0.1', port: agentPort });
    proxies.push(toControlPlane, toAgent);
    const { token } = await p.json<{ token: string }>('/v1/hosts/join-tokens', {
      method: 'POST',
      json: {},
    });
    agent = await startAgentProcess({
      controlPlane: `http://127.0.0.1:${toControlPlane.port}`,
      hostId: 'host_c1',
      token,
      listen: `127.0.0.1:${agentPort}`,
      advertise: `http://127.0.0.1:${toAgent.port}`,
      s3: s3.config,
    });
    const host = () => p.json<Json>('/v1/hosts/host_c1');
    await waitFor(async () => (await host()).connected, { what: 'connected' });
    const id = await createSandbox(p, { template: 'base', host_id: 'host_c1' });
    try {
      assert.equal((await exec(p, id, { cmd: 'echo', args: ['through'] })).stdout, 'through\n');
      toControlPlane.cut();
      toAgent.cut();
      // A call to its sandbox fails with a clear error at once, not a hang.
      const during = await p.api(`/v1/sandboxes/${id}/exec`, {
        method: 'POST',
        json: { cmd: 'true' },
        signal: AbortSignal.timeout(20_000),
      });
      assert.equal(during.status, 503);
      assert.equal(((await during.json()) as Json).error.code, 'HOST_UNREACHABLE');
      await waitFor(async () => (await host()).state === 'lost', {
        timeoutMs: 20_000,
        what: 'lost',
      });
      await waitFor(async () => (await p.json<Json>(`/v1/sandboxes/${id}`)).state === 'stopped', {
        what: 'its sandbox recorded stopped',
      });
      // Its sandbox still runs on the other side of the cut: nobody can reach it.
      assert.ok(containers(agent.home).includes(id));
      toControlPlane.heal();
      toAgent.heal();
      // Back means active again and reached: the control plane connects on its heartbeat.
      await waitFor(async () => ((h) => h.state === 'active' && h.connected)(await host()), {
        timeoutMs: 20_000,
        what: 'back',
      });
      const back = await host();
      assert.deepEqual([back.epoch, back.state_reason, back.sandboxes], [2, 'rejoined empty', 0]);
      await waitFor(() => !containers(agent!.home).includes(id), {
        what: 'the old copy destroyed',
      });
      assert.match(agent.log, /fenced .* destroying every sandbox of epoch 1/);
      // It takes work again.
      const next = await createSandbox(p, { template: 'base', host_id: 'host_c1' });
      assert.equal((await exec(p, next, { cmd: 'echo', args: ['again'] })).stdout, 'again\n');
      await p.api(`/v1/sandboxes/${next}`, { method: 'DELETE' });
    } finally {
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });

  it('fences an agent frozen past its lease: nothing runs twice', async () => {
    const a = agent!;
    const host = () => p.json<Json>('/v1/hosts/host_c1');
    const id = await createSandbox(p, { template: 'base', host_id: 'host_c1' });
    try {
      assert.equal((await exec(p, id, { cmd: 'echo', args: ['before'] })).stdout, 'before\n');
      a.child.kill('SIGSTOP');
      await waitFor(async () => (await host()).state === 'lost', {
        timeoutMs: 20_000,
        what: 'host lost',
      });
      await waitFor(async () => (await p.json<Json>(`/v1/sandboxes/${id}`)).state === 'stopped', {
        what: 'its sandbox recorded stopped',
      });
      a.child.kill('SIGCONT');
      await waitFor(async () => (await host()).state === 'active', {
        timeoutMs: 20_000,
        what: 'rejoined',
      });
      const back = await host();
      assert.deepEqual([back.epoch, back.state_reason, back.sandboxes], [3, 'rejoined empty', 0]);
      await waitFor(async () => !containers(a.home).includes(id), {
        timeoutMs: 10_000,
        what: 'old copy gone',
      });
      assert.match(a.log, /destroying every sandbox of epoch 2/);
    } finally {
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    }
  });
});
