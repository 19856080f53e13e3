/** Placement: which hosts can take a sandbox, and which of them does. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WarrenError } from '@warren/protocol';
import { place, type PlacementCandidate } from '../../src/hosts/placement';

const cap = (used: number, reserved = 0) => ({
  memory_budget_mb: 4096,
  memory_reserved_mb: reserved,
  memory_overcommit: 1,
  memory_start_mb: 64,
  sandboxes: 0,
  memory_used_mb: used,
});

const host = (id: string, over: Partial<PlacementCandidate> = {}): PlacementCandidate => ({
  id,
  state: 'active',
  connected: true,
  capacity: cap(0),
  templates: ['base'],
  sandboxes: 0,
  ...over,
});

const req = { template: 'base', memoryMb: 512 };

describe('placement', () => {
  it('spreads: the host with the fewest sandboxes, then the most free memory', () => {
    const hosts = [
      host('a', { sandboxes: 2 }),
      host('b', { sandboxes: 1 }),
      host('c', { sandboxes: 1, capacity: cap(100) }),
    ];
    const p = place(hosts, req);
    assert.equal(p.hostId, 'b');
    assert.match(p.reason, /placed on b: 3 of 3 hosts fit; fewest sandboxes \(1\), 4096 MiB free/);
  });

  it('with a shared store, takes hosts without the template too (they fetch it), after those with it', () => {
    const hosts = [
      host('notpl', { templates: [], capacity: cap(0) }),
      host('has', { capacity: cap(500) }),
    ];
    assert.throws(() => place([hosts[0]!], { ...req, fetchable: false }), {
      code: 'INSUFFICIENT_CAPACITY',
    });
    const only = place([hosts[0]!], { ...req, fetchable: true });
    assert.equal(only.hostId, 'notpl');
    assert.match(only.reason, /fetches template base from the shared store$/);
    // Equal sandboxes: the one with the template wins, though the other has more memory free.
    assert.equal(place(hosts, { ...req, fetchable: true }).hostId, 'has');
    // Fewer sandboxes still come first.
    const spread = [hosts[0]!, host('has', { sandboxes: 3 })];
    assert.equal(place(spread, { ...req, fetchable: true }).hostId, 'notpl');
    const pinned = place(hosts, {
      ...req,
      fetchable: true,
      pinned: { hostId: 'notpl', why: 'asked for by an admin' },
    });
    assert.match(pinned.reason, /^placed on notpl: asked for by an admin; fetches template base/);
  });

  it('filters hosts that are draining, lost, not connected, lack the template or memory', () => {
    const hosts = [
      host('drain', { state: 'draining' }),
      host('lost', { state: 'lost' }),
      host('gone', { connected: false }),
      host('notpl', { templates: ['other'] }),
      host('full', { capacity: cap(0, 3800) }),
      host('ok', { sandboxes: 9 }),
    ];
    assert.equal(place(hosts, req).hostId, 'ok');
    const err = (() => {
      try {
        place(hosts.slice(0, 5), req);
      } catch (e) {
        return e as WarrenError;
      }
      return null;
    })();
    assert.ok(err instanceof WarrenError);
    assert.equal(err.code, 'INSUFFICIENT_CAPACITY');
    assert.match(
      err.message,
      /drain: draining; lost: lost; gone: not connected; notpl: no template base; full: memory full/,
    );
  });

  it('takes a pinned host or says why it cannot', () => {
    const hosts = [host('a'), host('b', { state: 'draining' })];
    assert.deepEqual(
      place(hosts, { ...req, pinned: { hostId: 'a', why: 'its volume is there' } }),
      {
        hostId: 'a',
        reason: 'placed on a: its volume is there',
      },
    );
    assert.throws(
      () => place(hosts, { ...req, pinned: { hostId: 'b', why: 'its parent is there' } }),
      {
        code: 'INSUFFICIENT_CAPACITY',
        message: /host b \(its parent is there\) cannot take the sandbox: draining/,
      },
    );
    assert.throws(() => place(hosts, { ...req, pinned: { hostId: 'x', why: 'hint' } }), {
      code: 'HOST_NOT_FOUND',
    });
  });

  it('scores only a few of many hosts', () => {
    const hosts = Array.from({ length: 1000 }, (_, i) => host(`h${i}`, { sandboxes: i % 7 }));
    let n = 0;
    const p = place(hosts, req, () => (n += 0.37) % 1);
    assert.match(p.reason, /1000 of 1000 hosts fit, 3 scored/);
  });
});
