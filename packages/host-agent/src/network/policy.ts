/**
 * The egress policy model: what a sandbox may reach. One model for every way
 * traffic can leave (today the host-side proxies; a firewall in a network
 * namespace where runsc has netstack networking): a mode and two lists of
 * rules. A rule is a domain name (exact, or `*.suffix`), an IP address or a
 * CIDR, each with optional ports; or `preset:<name>`, a curated list.
 *
 * The decision itself is in decide(): pure, so the unit tests cover it whole.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { WarrenError } from '@warren/protocol';
import type { NetworkPolicy } from '@warren/protocol';
import { isPrivate, type AddressGuard } from './addresses';

export type { NetworkPolicy };

export interface PortRange {
  lo: number;
  hi: number;
}

export type Rule =
  | { kind: 'domain'; name: string; wildcard: boolean; ports: PortRange | null; text: string }
  | {
      kind: 'cidr';
      range: [ipaddr.IPv4 | ipaddr.IPv6, number];
      ports: PortRange | null;
      text: string;
    };

export interface CompiledPolicy {
  mode: NetworkPolicy['mode'];
  allow: Rule[];
  deny: Rule[];
}

/** Curated allowlists, by name; the operator may add or replace some (see config). */
export type Presets = Record<string, string[]>;

function invalid(message: string, rule?: string): WarrenError {
  return new WarrenError('INVALID_NETWORK_POLICY', message, rule ? { rule } : undefined);
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/** A domain name as rules and secrets name it: lower case, no trailing dot. */
export function normaliseName(name: string): string | null {
  const n = name.toLowerCase().replace(/\.$/, '');
  if (n.length === 0 || n.length > 253) return null;
  const labels = n.split('.');
  // An all-numeric last label is an address in disguise (300.1.2.3, 2852039166), not a name.
  if (/^\d+$/.test(labels[labels.length - 1]!)) return null;
  return labels.every((l) => LABEL.test(l)) ? n : null;
}

function parsePorts(text: string, rule: string): PortRange {
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(text);
  const lo = Number(m?.[1]);
  const hi = m?.[2] === undefined ? lo : Number(m[2]);
  if (!m || lo < 1 || hi > 65535 || lo > hi) throw invalid(`invalid port in rule ${rule}`, rule);
  return { lo, hi };
}

function parseAddressOrCidr(text: string, rule: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  const [addr = '', bits, extra] = text.split('/');
  const family = isIP(addr);
  if (family === 0 || extra !== undefined) throw invalid(`invalid address or CIDR: ${rule}`, rule);
  const parsed = ipaddr.process(addr);
  const max = parsed.kind() === 'ipv4' ? 32 : 128;
  // An IPv4-mapped IPv6 prefix is normalised to IPv4 like the addresses it is matched against.
  const shift = family === 6 && parsed.kind() === 'ipv4' ? 96 : 0;
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) throw invalid(`invalid CIDR: ${rule}`, rule);
  const prefix = bits === undefined ? max : Number(bits) - shift;
  if (prefix < 0 || prefix > max) throw invalid(`invalid CIDR prefix: ${rule}`, rule);
  return [parsed, prefix];
}

/** Parses one rule: `name`, `*.suffix`, `ip`, `cidr`, each optionally `:ports`; IPv6 as `[v6]:ports`. */
export function parseRule(text: string): Rule {
  const rule = text.trim();
  if (rule === '') throw invalid('empty rule', text);
  let target = rule;
  let ports: PortRange | null = null;
  const bracket = /^\[([^\]]+)\](?::(.+))?$/.exec(rule);
  if (bracket) {
    target = bracket[1]!;
    if (bracket[2] !== undefined) ports = parsePorts(bracket[2], rule);
  } else if ((rule.match(/:/g) ?? []).length === 1) {
    const at = rule.lastIndexOf(':');
    target = rule.slice(0, at);
    ports = parsePorts(rule.slice(at + 1), rule);
  }
  if (target === '') throw invalid(`empty domain in rule ${rule}`, rule);
  if (isIP(target.split('/')[0] ?? '') !== 0)
    return { kind: 'cidr', range: parseAddressOrCidr(target, rule), ports, text: rule };
  if (target.includes('/')) throw invalid(`invalid CIDR: ${rule}`, rule);
  const wildcard = target.startsWith('*.');
  const name = normaliseName(wildcard ? target.slice(2) : target);
  if (!name) throw invalid(`invalid domain name in rule ${rule}`, rule);
  return { kind: 'domain', name, wildcard, ports, text: rule };
}

function expand(rules: string[] | undefined, presets: Presets): Rule[] {
  const out: Rule[] = [];
  for (const text of rules ?? []) {
    if (typeof text !== 'string') throw invalid('a rule must be a string');
    if (text.startsWith('preset:')) {
      const list = presets[text.slice(7)];
      if (!list)
        throw invalid(
          `unknown preset ${text.slice(7)}; known: ${Object.keys(presets).join(', ')}`,
          text,
        );
      out.push(...list.map(parseRule));
    } else out.push(parseRule(text));
  }
  return out;
}

const MODES = new Set(['none', 'restricted', 'open']);

/** Validates a policy and resolves its presets; throws INVALID_NETWORK_POLICY. */
export function compilePolicy(policy: NetworkPolicy, presets: Presets): CompiledPolicy {
  if (!policy || typeof policy !== 'object') throw invalid('network must be an object');
  if (!MODES.has(policy.mode))
    throw invalid(`unknown network mode ${JSON.stringify(policy.mode)}: none, restricted or open`);
  return {
    mode: policy.mode,
    allow: expand(policy.allow, presets),
    deny: expand(policy.deny, presets),
  };
}

export interface Destination {
  /** What the client asked for: a name or an IP literal, lower case. */
  host: string;
  port: number;
}

export interface Decision {
  allowed: boolean;
  reason: string;
}

function portMatches(rule: Rule, port: number): boolean {
  return rule.ports === null || (port >= rule.ports.lo && port <= rule.ports.hi);
}

function nameMatches(rule: Rule, name: string): boolean {
  if (rule.kind !== 'domain') return false;
  return rule.wildcard ? name.endsWith('.' + rule.name) : name === rule.name;
}

function addressMatches(rule: Rule, addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return rule.kind === 'cidr' && rule.range[0].kind() === addr.kind() && addr.match(rule.range);
}

export function isIpLiteral(host: string): boolean {
  return isIP(host) !== 0;
}

/**
 * The first step, before any name is resolved: can this destination be
 * allowed at all? In `none` nothing can; in `restricted` a name must be named
 * by an allow rule, so the host never even looks up a name the policy does not
 * allow (a lookup is itself a way to leak data). Returns null to go on.
 */
export function precheck(policy: CompiledPolicy, dest: Destination): Decision | null {
  if (policy.mode === 'none') return { allowed: false, reason: 'network mode none' };
  const literal = isIpLiteral(dest.host);
  if (!literal) {
    const deny = policy.deny.find((r) => nameMatches(r, dest.host) && portMatches(r, dest.port));
    if (deny) return { allowed: false, reason: `denied by ${deny.text}` };
    if (
      policy.mode === 'restricted' &&
      !policy.allow.some((r) => nameMatches(r, dest.host) && portMatches(r, dest.port))
    )
      return { allowed: false, reason: 'not in allow list' };
  }
  return null;
}

/**
 * The decision on the resolved addresses. Every address must pass: the
 * always-blocked ranges (link-local, metadata, loopback, the host's own
 * addresses) unless the operator unblocked them; the deny rules; private
 * ranges only when an allow rule names them; in `restricted` an allow rule.
 * The connection then goes to these very addresses, never to a second lookup.
 */
export function decide(
  policy: CompiledPolicy,
  dest: Destination,
  addresses: string[],
  guard: AddressGuard,
): Decision {
  const pre = precheck(policy, dest);
  if (pre) return pre;
  if (addresses.length === 0) return { allowed: false, reason: 'name did not resolve' };
  const literal = isIpLiteral(dest.host);
  const byName = (r: Rule) => !literal && nameMatches(r, dest.host) && portMatches(r, dest.port);
  for (const text of addresses) {
    const addr = ipaddr.process(text);
    const blocked = guard.blocked(addr);
    if (blocked) return { allowed: false, reason: `${text} is ${blocked}` };
    const deny = policy.deny.find((r) => addressMatches(r, addr) && portMatches(r, dest.port));
    if (deny) return { allowed: false, reason: `denied by ${deny.text}` };
    const allowedBy = policy.allow.find(
      (r) => byName(r) || (addressMatches(r, addr) && portMatches(r, dest.port)),
    );
    if (!allowedBy && isPrivate(addr))
      return { allowed: false, reason: `${text} is a private address not in the allow list` };
    if (!allowedBy && policy.mode === 'restricted')
      return { allowed: false, reason: 'not in allow list' };
  }
  return { allowed: true, reason: policy.mode === 'open' ? 'open' : 'allowed' };
}

/** Checks a policy and the hosts of its secrets; throws INVALID_NETWORK_POLICY. */
export function checkNetwork(
  network: { policy: NetworkPolicy; secrets: Array<{ host: string; header: string }> },
  presets: Presets,
): void {
  compilePolicy(network.policy, presets);
  for (const s of network.secrets) {
    if (!normaliseName(s.host) || isIpLiteral(s.host))
      throw invalid(`secret host must be a domain name, not ${JSON.stringify(s.host)}`);
  }
}
