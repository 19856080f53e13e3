/** HostApi contract: what a live sandbox uses (CPU, memory, disk, network). Registered by contract.ts. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '@warren/protocol';
import { sh, type Ctx } from './contract';

export function hostApiUsageChecks(ctx: Ctx): void {
  it("reports a live sandbox's usage; none for one that is not live", async () => {
    const { host } = ctx;
    assert.equal(await host.sandboxes.usage(newId('sandbox')), null);
    const id = await ctx.create();
    const first = (await host.sandboxes.usage(id))!;
    assert.ok(first, 'a live sandbox has usage');
    assert.ok(Date.parse(first.started_at) <= Date.now());
    assert.ok((first.memory_bytes ?? 1) > 0);
    assert.ok(first.net_rx_bytes >= 0 && first.net_tx_bytes >= 0);
    await sh(
      host,
      id,
      "timeout 1.5 sh -c 'while :; do :; done'; head -c 20000000 /dev/urandom > /root/f",
    );
    const second = (await host.sandboxes.usage(id))!;
    assert.equal(second.started_at, first.started_at, 'the counters go on');
    if (first.cpu_seconds !== null)
      assert.ok(second.cpu_seconds! - first.cpu_seconds >= 1, `CPU ${JSON.stringify(second)}`);
    if ((await host.info()).capabilities.disk_limit) {
      const grown = second.disk_bytes! - first.disk_bytes!;
      assert.ok(grown > 18e6 && grown < 24e6, `disk grew by ${grown} bytes`);
    }
    const cap = await host.capacity();
    if (cap.memory_used_mb !== undefined) assert.ok(cap.memory_used_mb > 0);
    await host.sandboxes.destroy(id);
    assert.equal(await host.sandboxes.usage(id), null);
  });
}
