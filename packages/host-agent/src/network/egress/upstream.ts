/** Deciding a destination against the sandbox's policy, and connecting to the checked addresses. */
import { connect as netConnect, type Socket } from 'node:net';
import { decide as decidePolicy, precheck, type Decision } from '../policy';
import { logEgress } from './log';
import type { EgressOptions, EgressTarget, SandboxEgress } from './types';

/** The policy's decision, resolving the name on this host only when the policy may allow it. */
export async function decide(
  options: EgressOptions,
  sbx: SandboxEgress,
  rawHost: string,
  port: number,
): Promise<{ decision: Decision; addresses: string[]; host: string }> {
  const host = rawHost
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  const dest = { host, port };
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    return { decision: { allowed: false, reason: 'invalid port' }, addresses: [], host };
  const pre = precheck(sbx.policy, dest);
  if (pre) return { decision: pre, addresses: [], host };
  const addresses = await options.resolver.resolve(host);
  return { decision: decidePolicy(sbx.policy, dest, addresses, options.guard), addresses, host };
}

/** Connects to the first of the checked addresses that answers. */
export async function connectUpstream(
  options: EgressOptions,
  addresses: string[],
  port: number,
): Promise<Socket> {
  let last: Error = new Error('no address');
  for (const address of addresses) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const s = netConnect({ host: address, port, noDelay: true });
        const timer = setTimeout(
          () => s.destroy(new Error('connect timed out')),
          options.connectTimeoutMs ?? 10_000,
        );
        s.once('connect', () => {
          clearTimeout(timer);
          s.off('error', reject);
          s.on('error', () => undefined);
          resolve(s);
        });
        s.once('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      });
    } catch (err) {
      last = err as Error;
    }
  }
  throw last;
}

/** Connects to an allowed destination; a failure is logged and gives null. */
export async function connectLogged(
  options: EgressOptions,
  sbx: SandboxEgress,
  target: EgressTarget,
  addresses: string[],
  port: number,
  started: number,
): Promise<Socket | null> {
  try {
    return await connectUpstream(options, addresses, port);
  } catch (err) {
    logEgress(
      options,
      sbx,
      {
        ...target,
        address: addresses[0] ?? null,
        decision: 'allowed',
        reason: `upstream failed: ${(err as Error).message}`,
        bytes_out: 0,
        bytes_in: 0,
      },
      started,
    );
    return null;
  }
}
