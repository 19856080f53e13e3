/**
 * A host that placement chose but that refuses the sandbox (its capacity
 * report was behind): the create goes to another host that fits, and the
 * sandbox's event says so; when none is left, the caller gets
 * INSUFFICIENT_CAPACITY with every refusal, and nothing is left behind.
 * The refusing host is a HostApi stub joined to a platform on the fake driver.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { WarrenError, type HostApi } from '@warren/protocol';
import { joinFakeHost } from '../../../../test/fake-hosts';
import { TEMPLATE, errorOf, start, useFakeTemplates, type Fx, type Json } from './fake-platform';

useFakeTemplates();

describe('placement after a refusal (fake driver)', () => {
  let home = '';
  let fx: Fx;
  const creates: string[] = [];
  const refusing = {
    id: 'host_full',
    close: async () => undefined,
    sandboxes: {
      create: async (req: { id: string }) => {
        creates.push(req.id);
        throw new WarrenError('INSUFFICIENT_CAPACITY', 'host_full: memory full');
      },
    },
  } as unknown as HostApi;

  before(async () => {
    home = mkdtempSync('/tmp/wl-');
    fx = await start(home);
    // It says it has far more room than the local host (1000 MiB): placement picks it first.
    await joinFakeHost(fx.p.context.hosts, refusing, {
      capacity: {
        memory_budget_mb: 64_000,
        memory_reserved_mb: 0,
        memory_used_mb: 0,
        sandboxes: 0,
      },
      templates: [TEMPLATE],
      version: 'test',
      reason: '',
    });
  });
  after(async () => {
    try {
      await fx?.p.context.hosts.router.disconnect('host_full');
      await fx?.p.close();
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('creates on another host, and says which one refused', async () => {
    const sbx = await fx.create();
    try {
      assert.equal(creates.length, 1, 'host_full was asked first');
      assert.notEqual(sbx.id, creates[0], 'the refused attempt left no record');
      assert.equal((await fx.p.context.store.getSandboxById(sbx.id))!.host_id, 'host_local');
      const events = (await fx.json(`/v1/sandboxes/${sbx.id}/events`)).items as Json[];
      assert.match(events.at(-1).cause, /placed on host_local: 1 of 2 hosts fit/);
      assert.equal(await fx.p.context.store.getSandboxById(creates[0]!), undefined);
    } finally {
      await fx.api(`/v1/sandboxes/${sbx.id}`, { method: 'DELETE' });
    }
  });

  it('answers INSUFFICIENT_CAPACITY with every refusal when no host is left', async () => {
    creates.length = 0;
    const before = await fx.rowIds();
    const res = await fx.api('/v1/sandboxes', {
      method: 'POST',
      json: { template: TEMPLATE, memory_mb: 1024 },
    });
    const err = await errorOf(res);
    assert.equal(err.status, 503);
    assert.equal(err.code, 'INSUFFICIENT_CAPACITY');
    assert.match(err.message, /host_full: refused it just now/);
    assert.match(err.message, /host_local: memory full/);
    assert.equal(creates.length, 1);
    assert.deepEqual(await fx.rowIds(), before);
  });
});
