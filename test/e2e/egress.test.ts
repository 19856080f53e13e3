/**
 * Egress policy and credential injection against real gVisor sandboxes and
 * real servers in a network namespace this test creates (test/net). The
 * sandboxes have no network device: everything goes through the guest
 * agent's proxies and the host-side egress proxy.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import parse from 'parse-prometheus-text-format';
import { Sandbox } from '@warren/sdk';
import { createSandbox, exec, startTestPlatform, REPO, type TestPlatform } from '../fixture';
import { startTestNet, type TestNet } from '../net/netns';
import { waitFor } from '../wait';

const CLIENT = readFileSync(join(REPO, 'test/net/client.py'), 'utf8');
const SECRET = 'Bearer wrn-test-secret-9f8e7d6c5b4a';
const SECRET_TLS = 'tls-only-secret-0a1b2c3d4e5f';

describe('sandbox egress: policy, proxies, credential injection (real gVisor)', () => {
  let p: TestPlatform;
  let net: TestNet;
  const made: string[] = [];

  const probe = async (id: string, ...args: string[]) => {
    const r = await exec(p, id, { cmd: 'python3', args: ['-c', CLIENT, ...args], timeout: 60 });
    assert.equal(r.exit_code, 0, r.stderr);
    return JSON.parse(r.stdout) as Record<string, unknown> & { status?: number; body?: string };
  };
  const sandbox = async (body: Record<string, unknown>) => {
    const id = await createSandbox(p, { template: 'base', memory_mb: 128, ...body });
    made.push(id);
    return id;
  };
  const errorOf = async (res: Response) => {
    const body = (await res.json()) as { id?: string; error?: { code: string } };
    if (body.id) made.push(body.id);
    return [res.status, body.error?.code];
  };

  /** warren_egress_bytes_total {in, out} and allowed connections, from GET /metrics. */
  const egressMetrics = async () => {
    const families = parse(await (await p.api('/metrics')).text());
    const read = (name: string, label: string, v: string) =>
      Number(
        families.find((f) => f.name === name)?.metrics.find((m) => m.labels?.[label] === v)
          ?.value ?? 0,
      );
    return {
      in: read('warren_egress_bytes_total', 'direction', 'in'),
      out: read('warren_egress_bytes_total', 'direction', 'out'),
      allowed: read('warren_egress_connections_total', 'decision', 'allowed'),
    };
  };

  before(async () => {
    net = await startTestNet(['allowed.test', 'denied.test', 'secure.test'], ['hostside.test']);
    try {
      p = await startTestPlatform({
        egressHostsFile: net.hostsFile,
        egressCaFiles: [net.caFile],
      });
    } catch (err) {
      net.close();
      throw err;
    }
  });
  after(async () => {
    try {
      for (const id of made) await p?.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
      await p?.host.settle();
      assert.deepEqual(p?.runscContainers() ?? [], []);
    } finally {
      await p?.stop();
      net?.close();
    }
  });

  it('restricted: reaches allowed names and addresses only, by HTTP, HTTPS and SOCKS5', async () => {
    const id = await sandbox({
      network: {
        mode: 'restricted',
        allow: ['allowed.test:80', 'secure.test:443', `${net.remoteAddress}:7000`],
      },
      secrets: [
        { host: 'allowed.test', header: 'Authorization', value: SECRET },
        { host: 'secure.test', header: 'X-Api-Key', value: SECRET_TLS },
      ],
    });

    // HTTP through HTTP_PROXY: the secret reaches the upstream in the header.
    const counted = await egressMetrics();
    const ok = await probe(id, 'http', 'http://allowed.test/echo');
    assert.equal(ok.status, 200, JSON.stringify(ok));
    const seen = JSON.parse(ok.body!) as { headers: Record<string, string> };
    assert.equal(seen.headers.authorization, SECRET);

    // The platform's egress counters hold that connection's bytes, as its log entry has them:
    // for a plain HTTP request, the bodies (the answer's in, none out for a GET).
    const [entry] = await waitFor(
      async () => {
        const items = (await p.json(`/v1/sandboxes/${id}/egress`)).items as Array<{
          bytes_in: number;
          bytes_out: number;
        }>;
        return items.length > 0 && (await egressMetrics()).in > counted.in && items;
      },
      { what: 'the first connection in the egress log and in warren_egress_bytes_total' },
    );
    assert.deepEqual([entry!.bytes_in, entry!.bytes_out], [Buffer.byteLength(ok.body!), 0]);
    const moved = await egressMetrics();
    assert.deepEqual(
      [moved.in - counted.in, moved.out - counted.out, moved.allowed - counted.allowed],
      [entry!.bytes_in, 0, 1],
    );

    // HTTPS: the proxy terminates TLS with the install's CA (trusted in the sandbox),
    // verifies the upstream against the operator's CA, and adds the header.
    const tls = await probe(id, 'http', 'https://secure.test/echo');
    assert.equal(tls.status, 200, JSON.stringify(tls));
    assert.equal(
      (JSON.parse(tls.body!) as { headers: Record<string, string> }).headers['x-api-key'],
      SECRET_TLS,
    );

    // The same server by another name, by raw IP, on another port: refused.
    assert.equal((await probe(id, 'http', 'http://denied.test/echo')).status, 403);
    assert.equal((await probe(id, 'http', `http://${net.remoteAddress}/echo`)).status, 403);
    assert.equal((await probe(id, 'http', 'http://allowed.test:7000/')).status, 403);

    // Other TCP through SOCKS5: the allowed address and port only.
    const echo = await probe(id, 'socks', net.remoteAddress, '7000');
    assert.deepEqual(echo, { reply: 0, echo: 'hello through socks\n' });
    assert.equal((await probe(id, 'socks', net.remoteAddress, '80')).reply, 2);
    assert.equal((await probe(id, 'socks', 'denied.test', '7000')).reply, 2);

    // No path around the proxies: no device, no route.
    assert.equal((await probe(id, 'direct', net.remoteAddress, '80')).connected, false);

    // The secrets never entered the sandbox: not in env, /proc (memory included) or files.
    const hex = (s: string) => Buffer.from(s).toString('hex');
    const scan = await probe(id, 'scan', hex(SECRET), hex(SECRET_TLS));
    assert.deepEqual(scan.found, []);
    const envOut = await exec(p, id, { cmd: 'env', args: [] });
    assert.ok(!envOut.stdout.includes('wrn-test-secret'));
    assert.match(envOut.stdout, /HTTPS_PROXY=http:\/\/127\.0\.0\.1:3128/);

    // The views show where secrets go, never their values.
    const view = await p.json(`/v1/sandboxes/${id}/network`);
    assert.deepEqual(view.secrets, [
      { host: 'allowed.test', header: 'Authorization' },
      { host: 'secure.test', header: 'X-Api-Key' },
    ]);
    const sandboxText = await (await p.api(`/v1/sandboxes/${id}`)).text();
    assert.ok(!JSON.stringify(view).includes('secret-') && !sandboxText.includes('secret-'));

    // Every decision is logged, with bytes.
    const log = (await p.json(`/v1/sandboxes/${id}/egress?limit=100`)).items as Array<{
      host: string;
      port: number;
      decision: string;
      protocol: string;
      bytes_in: number;
    }>;
    const find = (host: string, decision: string, protocol?: string) =>
      log.find(
        (e) => e.host === host && e.decision === decision && (!protocol || e.protocol === protocol),
      );
    assert.ok(find('allowed.test', 'allowed', 'http')!.bytes_in > 0);
    assert.ok(find('secure.test', 'allowed', 'connect')!.bytes_in > 0);
    assert.ok(find('denied.test', 'denied', 'http'));
    assert.ok(find(net.remoteAddress, 'allowed', 'socks5'));
    assert.ok(find(net.remoteAddress, 'denied', 'socks5'));
    const denied = (await p.json(`/v1/sandboxes/${id}/egress?decision=denied`)).items as Array<{
      decision: string;
    }>;
    assert.ok(denied.length >= 4 && denied.every((e) => e.decision === 'denied'));

    // The policy changes on the running sandbox, for new connections at once.
    const changed = await p.json(`/v1/sandboxes/${id}/network`, {
      method: 'PUT',
      json: { mode: 'none' },
    });
    assert.equal(changed.mode, 'none');
    assert.equal(changed.secrets.length, 2);
    assert.equal((await probe(id, 'http', 'http://allowed.test/echo')).status, 403);
    assert.equal((await probe(id, 'socks', net.remoteAddress, '7000')).reply, 2);
  });

  it('open: everything but deny, while metadata, loopback and the host stay blocked; kept across snapshot and hibernate', async () => {
    const id = await sandbox({
      network: { mode: 'open', allow: [`10.213.0.0/16`], deny: ['denied.test'] },
    });
    assert.equal((await probe(id, 'http', 'http://allowed.test/echo')).status, 200);
    assert.equal((await probe(id, 'http', `http://${net.remoteAddress}/echo`)).status, 200);
    assert.equal((await probe(id, 'http', 'http://denied.test/echo')).status, 403);
    const blocked = [
      'http://169.254.169.254/latest/meta-data/',
      'http://100.100.100.200/',
      'http://[fd00:ec2::254]/',
      'http://[::ffff:169.254.169.254]/',
      'http://2852039166/', // 169.254.169.254 as one number
      `http://${net.hostAddress}/`, // the host's own address, inside the allowed CIDR
      'http://hostside.test/',
    ];
    // Loopback is the sandbox's own (NO_PROXY); asked of the proxy, the host's loopback is refused.
    const port = new URL(p.url).port;
    const socks = [
      ['127.0.0.1', port],
      ['localhost', port],
      ['169.254.169.254', '80'],
      [net.hostAddress, '7000'],
    ];
    const results = (await probe(
      id,
      'batch',
      JSON.stringify([...blocked.map((u) => ['http', u]), ...socks.map((a) => ['socks', ...a])]),
    )) as unknown as Array<{ status?: number; reply?: number }>;
    blocked.forEach((url, i) =>
      assert.equal(results[i]!.status, 403, `${url}: ${JSON.stringify(results[i])}`),
    );
    socks.forEach((a, i) => assert.equal(results[blocked.length + i]!.reply, 2, a.join(':')));

    // A snapshot keeps the policy; a sandbox restored from it egresses the same way.
    const snap = await p.json(`/v1/sandboxes/${id}/snapshots`, { method: 'POST' });
    const copy = await sandbox({ from_snapshot: snap.id });
    const view = await p.json(`/v1/sandboxes/${copy}/network`);
    assert.equal(view.mode, 'open');
    assert.deepEqual(view.deny, ['denied.test']);
    assert.equal((await probe(copy, 'http', 'http://allowed.test/echo')).status, 200);
    assert.equal((await probe(copy, 'http', 'http://denied.test/echo')).status, 403);
    // The source still egresses after the capture.
    assert.equal((await probe(id, 'http', 'http://allowed.test/echo')).status, 200);

    // So does a fork.
    const tree = await p.json(`/v1/sandboxes/${id}/fork-tree`, {
      method: 'POST',
      json: { count: 1 },
    });
    const child = tree.children[0].id as string;
    made.push(child);
    assert.equal((await p.json(`/v1/sandboxes/${child}/network`)).mode, 'open');
    assert.equal((await probe(child, 'http', 'http://denied.test/echo')).status, 403);
    assert.equal((await probe(child, 'http', 'http://allowed.test/echo')).status, 200);

    // Hibernate and wake keep it too.
    await p.json(`/v1/sandboxes/${copy}/hibernate`, { method: 'POST' });
    await p.json(`/v1/sandboxes/${copy}/wake`, { method: 'POST' });
    assert.equal((await probe(copy, 'http', 'http://allowed.test/echo')).status, 200);
    assert.equal((await probe(copy, 'http', 'http://denied.test/echo')).status, 403);
    await p.api(`/v1/snapshots/${snap.id}`, { method: 'DELETE' });
  });

  it('none (the default) reaches nothing; bad policies are a 400 with a stable code', async () => {
    const id = await sandbox({});
    assert.equal((await p.json(`/v1/sandboxes/${id}/network`)).mode, 'none');
    const r = await probe(id, 'http', 'http://allowed.test/echo');
    assert.equal(r.status, 403);
    assert.equal((await probe(id, 'socks', net.remoteAddress, '7000')).reply, 2);
    assert.equal((await probe(id, 'http', 'https://secure.test/echo')).status, 0);

    const before = (await p.json('/v1/sandboxes')).items.length;
    for (const network of [
      { mode: 'restricted', allow: ['10.0.0.0/33'] },
      { mode: 'restricted', allow: ['300.1.2.3'] },
      { mode: 'restricted', allow: [''] },
      { mode: 'restricted', allow: [':443'] },
      { mode: 'restricted', allow: ['example.com:99999'] },
      { mode: 'restricted', allow: ['preset:nope'] },
      { mode: 'bogus' },
      { allow: ['example.com'] },
    ]) {
      const res = await p.api('/v1/sandboxes', { method: 'POST', json: { network } });
      assert.deepEqual(
        await errorOf(res),
        [400, 'INVALID_NETWORK_POLICY'],
        JSON.stringify(network),
      );
    }
    const badSecret = await p.api('/v1/sandboxes', {
      method: 'POST',
      json: { secrets: [{ host: '10.0.0.1', header: 'X', value: 'v' }] },
    });
    assert.deepEqual(await errorOf(badSecret), [400, 'INVALID_NETWORK_POLICY']);
    assert.equal((await p.json('/v1/sandboxes')).items.length, before);

    const put = await p.api(`/v1/sandboxes/${id}/network`, {
      method: 'PUT',
      json: { mode: 'open', deny: ['*.'] },
    });
    assert.deepEqual(await errorOf(put), [400, 'INVALID_NETWORK_POLICY']);
    const putMode = await p.api(`/v1/sandboxes/${id}/network`, {
      method: 'PUT',
      json: { mode: 'sometimes' },
    });
    assert.deepEqual(await errorOf(putMode), [400, 'INVALID_NETWORK_POLICY']);
    assert.equal((await p.json(`/v1/sandboxes/${id}/network`)).mode, 'none');

    // The SDK: change the policy, then read the log.
    const sdk = await Sandbox.connect(id, { apiUrl: p.url, apiKey: p.adminToken });
    const set = await sdk.network.set({ mode: 'restricted', allow: ['allowed.test:80'] });
    assert.deepEqual(set.allow, ['allowed.test:80']);
    assert.equal((await probe(id, 'http', 'http://allowed.test/echo')).status, 200);
    const allowed = await sdk.network.log({ decision: 'allowed', limit: 5 });
    assert.equal(allowed[0]?.host, 'allowed.test');
  });
});
