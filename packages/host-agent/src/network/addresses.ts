/**
 * Addresses no sandbox reaches whatever its policy says, and the private
 * ranges a policy must name explicitly. The operator can add blocked ranges
 * and lift blocks for ranges of their own (WARREN_EGRESS_BLOCK, _UNBLOCK).
 */
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Addr, number];

function ranges(list: Array<[string, string]>): Array<{ range: Range; why: string }> {
  return list.map(([cidr, why]) => ({ range: ipaddr.parseCIDR(cidr), why }));
}

/** Never reachable from a sandbox unless the operator unblocks them. */
export const ALWAYS_BLOCKED = ranges([
  ['0.0.0.0/8', 'an unspecified address'],
  ['127.0.0.0/8', 'a loopback address'],
  ['169.254.0.0/16', 'a link-local (cloud metadata) address'],
  ['100.100.100.200/32', 'a cloud metadata address'],
  ['192.0.0.0/24', 'an IETF protocol address'],
  ['224.0.0.0/4', 'a multicast address'],
  ['240.0.0.0/4', 'a reserved address'],
  ['::/128', 'an unspecified address'],
  ['::1/128', 'a loopback address'],
  ['::/96', 'an IPv4-compatible address'],
  ['fe80::/10', 'a link-local address'],
  ['ff00::/8', 'a multicast address'],
  ['fd00:ec2::254/128', 'a cloud metadata address'],
  // Prefixes that carry an IPv4 address inside: a way around the IPv4 rules.
  ['64:ff9b::/96', 'a NAT64 address'],
  ['64:ff9b:1::/48', 'a NAT64 address'],
  ['2002::/16', 'a 6to4 address'],
  ['2001::/32', 'a Teredo address'],
]);

/** Reachable only when an allow rule names them (by address or by name), in every mode. */
export const PRIVATE = ranges([
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['100.64.0.0/10', 'shared (CGNAT)'],
  ['198.18.0.0/15', 'benchmarking'],
  ['fc00::/7', 'unique local'],
]);

function inAny(addr: Addr, list: Array<{ range: Range }>): { range: Range; why?: string } | null {
  for (const r of list) if (r.range[0].kind() === addr.kind() && addr.match(r.range)) return r;
  return null;
}

export function isPrivate(addr: Addr): boolean {
  return inAny(addr, PRIVATE) !== null;
}

export function parseCidrList(text: string | undefined): Range[] {
  return (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) =>
      s.includes('/')
        ? ipaddr.parseCIDR(s)
        : ipaddr.parseCIDR(`${s}/${s.includes(':') ? 128 : 32}`),
    );
}

export interface AddressGuardOptions {
  /** Ranges blocked in addition to the built-in ones. */
  block?: Range[];
  /** Ranges the operator lifts the built-in blocks from (a mirror on the host, say). */
  unblock?: Range[];
}

/**
 * Says why an address is blocked, or null. The host's own addresses (every
 * interface's, re-read every few seconds) count as blocked: services that
 * listen on the host, on any of its addresses, are not the sandbox's to reach.
 */
export class AddressGuard {
  private own: Array<{ range: Range; why: string }> = [];
  private ownReadAt = 0;
  private readonly block: Array<{ range: Range; why: string }>;
  private readonly unblock: Array<{ range: Range }>;

  constructor(opts: AddressGuardOptions = {}) {
    this.block = (opts.block ?? []).map((range) => ({ range, why: 'blocked by the operator' }));
    this.unblock = (opts.unblock ?? []).map((range) => ({ range }));
  }

  private ownAddresses(): Array<{ range: Range; why: string }> {
    if (Date.now() - this.ownReadAt > 5_000) {
      this.own = [];
      for (const list of Object.values(networkInterfaces())) {
        for (const i of list ?? []) {
          const addr = ipaddr.process(i.address.split('%')[0]!);
          this.own.push({
            range: [addr, addr.kind() === 'ipv4' ? 32 : 128],
            why: "an address of the sandbox's host",
          });
        }
      }
      this.ownReadAt = Date.now();
    }
    return this.own;
  }

  blocked(addr: Addr): string | null {
    const operator = inAny(addr, this.block);
    if (operator) return operator.why ?? 'blocked';
    if (inAny(addr, this.unblock)) return null;
    const hit = inAny(addr, ALWAYS_BLOCKED) ?? inAny(addr, this.ownAddresses());
    return hit ? (hit.why ?? 'blocked') : null;
  }
}
