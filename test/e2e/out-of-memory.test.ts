/**
 * A sandbox that runs out of memory, on real gVisor: its memory limit is its
 * cgroup's, and past it the host's OOM killer kills the sentry, so the whole
 * sandbox dies. Warren's sweep notices, records it stopped with the cause
 * `out of memory`, and a webhook receiver on loopback gets
 * sandbox.state_changed with cause {kind: 'out_of_memory'}.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSandbox, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('out of memory (real gVisor)', () => {
  const got: Json[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push(JSON.parse(Buffer.concat(chunks).toString()) as Json);
      res.writeHead(204).end();
    });
  });
  let p: TestPlatform;

  before(async () => {
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    p = await startTestPlatform({ sweepIntervalMs: 500 });
  });
  after(async () => {
    await p?.stop();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  });

  it('records a sandbox killed for its memory stopped with the out_of_memory cause', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    await p.json('/v1/webhooks', {
      method: 'POST',
      json: { url, events: ['sandbox.state_changed'] },
    });
    const id = await createSandbox(p, { template: 'base', memory_mb: 128 });
    // Allocates without bound: 16 MiB at a time, touched, until something gives.
    // Usually the host's OOM killer ends the sentry (502); now and then gVisor
    // fails the allocation inside the sandbox first and python exits 1 with the
    // sandbox still running (docs/webhooks.md), so the shell tries again.
    const alloc = "python3 -c 'a = []\nwhile True: a.append(bytearray(16 << 20))'";
    const res = await p.api(`/v1/sandboxes/${id}/exec`, {
      method: 'POST',
      json: {
        cmd: 'sh',
        args: ['-c', `for i in $(seq 20); do ${alloc}; echo "try $i: $?"; done`],
        timeout: 60,
      },
    });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 502, JSON.stringify(body));
    assert.equal(body.error.code, 'SANDBOX_OUT_OF_MEMORY');
    assert.match(body.error.message, /ran out of memory/);

    const stopped = await waitFor(
      async () => {
        const sbx = await p.json(`/v1/sandboxes/${id}`);
        return sbx.state === 'stopped' && sbx;
      },
      { what: 'the sandbox to be recorded stopped', timeoutMs: 45_000, intervalMs: 250 },
    );
    assert.equal(stopped.stop_reason, 'out of memory');
    const events = (await p.json(`/v1/sandboxes/${id}/events`)) as Json;
    const items: Json[] = events.items ?? events;
    assert.ok(
      items.some((e: Json) => e.to_state === 'stopped' && e.cause === 'out of memory'),
      JSON.stringify(items),
    );

    const hook = await waitFor(
      () =>
        got.find(
          (e) =>
            e.type === 'sandbox.state_changed' &&
            e.data.sandbox.id === id &&
            e.data.state === 'stopped',
        ),
      { what: 'the stopped webhook', timeoutMs: 15_000 },
    );
    assert.deepEqual(hook.data.cause, { kind: 'out_of_memory', detail: 'out of memory' });
    assert.equal(hook.data.from_state, 'running');
  });
});
