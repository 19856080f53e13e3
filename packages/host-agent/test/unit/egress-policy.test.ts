import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { WarrenError } from '@warren/protocol';
import { AddressGuard, parseCidrList } from '../../src/network/addresses';
import { compilePolicy, decide, parseRule, precheck } from '../../src/network/policy';
import { BUILTIN_PRESETS } from '../../src/network/presets';
import type { NetworkPolicy } from '@warren/protocol';

const guard = new AddressGuard();
const run = (policy: NetworkPolicy, host: string, port: number, addresses: string[]) =>
  decide(compilePolicy(policy, BUILTIN_PRESETS), { host, port }, addresses, guard);

describe('egress policy rules', () => {
  it('parses names, wildcards, addresses, CIDRs and ports', () => {
    assert.deepEqual(
      (({ kind, name, wildcard, ports }) => ({ kind, name, wildcard, ports }))(
        parseRule('*.Example.COM:443') as never,
      ),
      { kind: 'domain', name: 'example.com', wildcard: true, ports: { lo: 443, hi: 443 } },
    );
    assert.equal(parseRule('10.0.0.0/8:5432-5433').kind, 'cidr');
    assert.deepEqual(parseRule('10.0.0.0/8:5432-5433').ports, { lo: 5432, hi: 5433 });
    assert.equal(parseRule('2001:db8::/32').kind, 'cidr');
    assert.deepEqual(parseRule('[2001:db8::/32]:443').ports, { lo: 443, hi: 443 });
    assert.equal(parseRule('192.0.2.7').kind, 'cidr');
  });

  it('refuses malformed rules with INVALID_NETWORK_POLICY', () => {
    for (const bad of [
      '',
      ' ',
      ':443',
      '10.0.0.0/33',
      '10.0.0.0/8/8',
      '300.1.2.3',
      'exa mple.com',
      'example.com:0',
      'example.com:70000',
      'example.com:9-1',
      '*.',
      '-bad.com',
      'a/b',
      '[::1',
    ]) {
      assert.throws(
        () => parseRule(bad),
        (e: unknown) => e instanceof WarrenError && e.code === 'INVALID_NETWORK_POLICY',
        bad,
      );
    }
    assert.throws(
      () => compilePolicy({ mode: 'restricted', allow: ['preset:nope'] }, BUILTIN_PRESETS),
      /unknown preset/,
    );
    assert.throws(
      () => compilePolicy({ mode: 'sometimes' } as never, BUILTIN_PRESETS),
      /unknown network mode/,
    );
  });
});

describe('egress decisions', () => {
  const pub = '93.184.216.34';

  it('none allows nothing, before any lookup', () => {
    const p = compilePolicy({ mode: 'none' }, BUILTIN_PRESETS);
    assert.equal(precheck(p, { host: 'example.com', port: 443 })?.allowed, false);
    assert.equal(run({ mode: 'none' }, pub, 443, [pub]).allowed, false);
  });

  it('restricted allows only what allow names, by name (exact or wildcard), address and port', () => {
    const policy: NetworkPolicy = {
      mode: 'restricted',
      allow: ['example.com:443', '*.cdn.test', '93.184.216.0/24:22', 'preset:pypi'],
    };
    assert.equal(run(policy, 'example.com', 443, [pub]).allowed, true);
    assert.equal(run(policy, 'example.com', 80, [pub]).allowed, false);
    assert.equal(run(policy, 'www.example.com', 443, [pub]).allowed, false);
    assert.equal(run(policy, 'a.b.cdn.test', 80, [pub]).allowed, true);
    assert.equal(run(policy, 'cdn.test', 80, [pub]).allowed, false);
    assert.equal(run(policy, pub, 22, [pub]).allowed, true);
    assert.equal(run(policy, pub, 443, [pub]).allowed, false);
    assert.equal(run(policy, 'files.pythonhosted.org', 443, [pub]).allowed, true);
    // A name the policy does not name is refused before it is looked up.
    const p = compilePolicy(policy, BUILTIN_PRESETS);
    assert.equal(precheck(p, { host: 'leak.attacker.test', port: 443 })?.allowed, false);
  });

  it('open allows everything but deny, by name and by address', () => {
    const policy: NetworkPolicy = { mode: 'open', deny: ['*.bad.test', '198.51.100.0/24'] };
    assert.equal(run(policy, 'example.com', 443, [pub]).allowed, true);
    assert.equal(run(policy, 'x.bad.test', 443, [pub]).allowed, false);
    assert.equal(run(policy, 'good.test', 443, ['198.51.100.9']).allowed, false);
    assert.equal(run(policy, 'nowhere.test', 443, []).allowed, false);
  });

  it('blocks metadata, link-local, loopback and IPv4 hidden in IPv6, in every mode, even when allowed', () => {
    const policy: NetworkPolicy = {
      mode: 'open',
      allow: ['0.0.0.0/0', '::/0', 'metadata.test'],
    };
    for (const addr of [
      '169.254.169.254',
      '100.100.100.200',
      'fd00:ec2::254',
      '127.0.0.1',
      '::1',
      '::ffff:169.254.169.254',
      '::ffff:127.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '2002:a9fe:a9fe::1',
      '0.0.0.0',
      '224.0.0.1',
      'fe80::1',
    ]) {
      assert.equal(run(policy, addr, 80, [addr]).allowed, false, addr);
      assert.equal(run(policy, 'metadata.test', 80, [addr]).allowed, false, `by name: ${addr}`);
    }
  });

  it("blocks the host's own addresses", () => {
    const own = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && !i.internal && i.family === 'IPv4')?.address;
    if (!own) return;
    assert.equal(run({ mode: 'open', allow: ['0.0.0.0/0'] }, own, 80, [own]).allowed, false);
  });

  it('private ranges need an allow rule, also in open mode', () => {
    assert.equal(run({ mode: 'open' }, '10.1.2.3', 80, ['10.1.2.3']).allowed, false);
    assert.equal(run({ mode: 'open' }, 'db.internal', 80, ['192.168.1.5']).allowed, false);
    assert.equal(
      run({ mode: 'open', allow: ['10.0.0.0/8'] }, '10.1.2.3', 80, ['10.1.2.3']).allowed,
      true,
    );
    assert.equal(
      run({ mode: 'open', allow: ['db.internal'] }, 'db.internal', 80, ['192.168.1.5']).allowed,
      true,
    );
  });

  it('every resolved address must pass: one blocked address denies the name', () => {
    const policy: NetworkPolicy = { mode: 'open' };
    assert.equal(run(policy, 'rebind.test', 80, [pub, '169.254.169.254']).allowed, false);
  });

  it('the operator can unblock ranges and block more', () => {
    const g = new AddressGuard({
      unblock: parseCidrList('127.0.0.1/32'),
      block: parseCidrList('93.184.216.34'),
    });
    const p = compilePolicy({ mode: 'open' }, BUILTIN_PRESETS);
    assert.equal(decide(p, { host: '127.0.0.1', port: 80 }, ['127.0.0.1'], g).allowed, true);
    assert.equal(decide(p, { host: '127.0.0.2', port: 80 }, ['127.0.0.2'], g).allowed, false);
    assert.equal(decide(p, { host: pub, port: 80 }, [pub], g).allowed, false);
  });
});
