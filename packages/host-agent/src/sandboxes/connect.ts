/**
 * The channel to a sandbox's guest agent, listening on the endpoint its
 * driver provides, with the sandbox's identity and egress in the hello the
 * guest gets each time it dials in.
 */
import {
  WarrenError,
  type GuestEgress,
  type GuestHello,
  type SandboxNetwork,
} from '@warren/protocol';
import type { HostContext } from '../context';
import { GuestChannel } from '../guest/channel';
import { newDataToken } from '../guest/data-connections';
import { checkNetwork } from '../network/policy';
import { BUILTIN_PRESETS } from '../network/presets';
import type { SandboxSpec } from '../runtime/driver';

/** A listening channel for sandbox `id`; the hello is sent once the guest dials in. */
export async function openChannel(
  ctx: HostContext,
  id: string,
  spec: Pick<SandboxSpec, 'channelDir'>,
  env: Record<string, string>,
  network: SandboxNetwork | undefined,
): Promise<GuestChannel> {
  const channel = new GuestChannel(ctx.driver.guestEndpoint(spec), (): GuestHello => ({
    sandbox_id: id,
    env,
    egress,
  }));
  // The hello is sent only once the guest dials in, after this line.
  const egress = attachEgress(ctx, id, channel, network);
  try {
    await channel.listen();
  } catch (err) {
    ctx.egress?.detach(id);
    throw err;
  }
  return channel;
}

/**
 * Gives the sandbox its egress policy and the channel its egress token: the
 * guest relays connections to the host with it. None where the driver's
 * sandboxes are not isolated from the host (capabilities.egress).
 */
function attachEgress(
  ctx: HostContext,
  id: string,
  channel: GuestChannel,
  network: SandboxNetwork | undefined,
): GuestEgress | undefined {
  const proxy = ctx.egress;
  if (!proxy || !ctx.driver.capabilities.egress) return undefined;
  proxy.configure(id, network?.policy ?? { mode: 'none' }, network?.secrets ?? []);
  const token = newDataToken();
  channel.acceptEgress(token, (socket) => proxy.handle(id, socket));
  return { token, ca_pem: proxy.caPem };
}

/** Checks a policy (its presets included) and secrets; throws INVALID_NETWORK_POLICY. */
export function checkSandboxNetwork(ctx: HostContext, network: SandboxNetwork): void {
  checkNetwork(network, ctx.egress?.options.presets ?? BUILTIN_PRESETS);
}

/** Changes the egress policy (and secrets) of a live sandbox; open connections stay. */
export function setSandboxNetwork(ctx: HostContext, id: string, network: SandboxNetwork): void {
  ctx.registry.live(id);
  if (ctx.driver.capabilities.egress) ctx.egress?.configure(id, network.policy, network.secrets);
}

export function refuseVolumesWithoutDisk(ctx: HostContext, hasDisk: boolean): void {
  if (!hasDisk)
    throw new WarrenError(
      'SANDBOX_HAS_VOLUMES',
      'this snapshot was taken before volumes existed and cannot have any attached',
    );
  if (!ctx.driver.capabilities.diskLimit)
    throw new WarrenError(
      'INVALID_REQUEST',
      `the ${ctx.driver.name} runtime cannot attach volumes`,
    );
}
