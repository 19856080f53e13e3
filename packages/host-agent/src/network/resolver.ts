/**
 * Names are resolved on the host, never in the sandbox (it has no resolver
 * and no route for DNS). An operator hosts file overrides the system
 * resolver for the names it lists (WARREN_EGRESS_HOSTS_FILE): internal
 * mirrors, or the servers of a test.
 */
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';

export class Resolver {
  private readonly overrides = new Map<string, string[]>();

  constructor(hostsFile?: string) {
    if (!hostsFile) return;
    for (const raw of readFileSync(hostsFile, 'utf8').split('\n')) {
      const [address, ...names] = raw.replace(/#.*/, '').trim().split(/\s+/);
      if (!address || isIP(address) === 0) continue;
      for (const name of names) {
        const key = name.toLowerCase().replace(/\.$/, '');
        this.overrides.set(key, [...(this.overrides.get(key) ?? []), address]);
      }
    }
  }

  /** Every address of a name (an IP literal is its own address); [] when it does not resolve. */
  async resolve(host: string): Promise<string[]> {
    if (isIP(host) !== 0) return [host];
    const own = this.overrides.get(host);
    if (own) return own;
    try {
      const found = await lookup(host, { all: true, verbatim: true });
      return found.map((a) => a.address);
    } catch {
      return [];
    }
  }
}
