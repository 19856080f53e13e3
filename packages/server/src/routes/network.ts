import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  EgressEventList,
  EgressQuery,
  IdParams,
  NetworkUpdate,
  NetworkView,
  WarrenError,
  type SandboxNetwork,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { errors } from './responses';

/** What the API shows of a network: the policy, and where secrets go but never their values. */
function view(network: SandboxNetwork) {
  return {
    mode: network.policy.mode,
    allow: network.policy.allow ?? [],
    deny: network.policy.deny ?? [],
    secrets: network.secrets.map(({ host, header }) => ({ host, header })),
  };
}

export const networkRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/v1/sandboxes/:id/network',
      {
        schema: {
          tags: ['network'],
          summary: 'The egress policy of a sandbox, and the hosts and headers secrets go to',
          params: IdParams,
          response: { 200: NetworkView, ...errors },
        },
      },
      async (req) => view(await ctx.network.get(req.principal!.orgId, req.params.id)),
    );

    app.put(
      '/v1/sandboxes/:id/network',
      {
        // Every malformed policy answers INVALID_NETWORK_POLICY, as at create.
        attachValidation: true,
        schema: {
          tags: ['network'],
          summary:
            'Replace the egress policy (and secrets, when given); applies to new connections at once',
          params: IdParams,
          body: NetworkUpdate,
          response: { 200: NetworkView, ...errors },
        },
      },
      async (req) => {
        const failed = req.validationError;
        if (failed) {
          const where = failed.validationContext === 'params' ? 'INVALID_REQUEST' : null;
          throw new WarrenError(where ?? 'INVALID_NETWORK_POLICY', failed.message);
        }
        const { secrets, ...policy } = req.body;
        return view(
          await ctx.network.set(req.principal!.orgId, req.params.id, { policy, secrets }),
        );
      },
    );

    app.get(
      '/v1/sandboxes/:id/egress',
      {
        schema: {
          tags: ['network'],
          summary:
            'The egress log: every connection the sandbox asked for, the decision, and bytes each way',
          params: IdParams,
          querystring: EgressQuery,
          response: { 200: EgressEventList, ...errors },
        },
      },
      async (req) => {
        return {
          items: await ctx.network.egressLog(req.principal!.orgId, req.params.id, req.query),
        };
      },
    );
  };
