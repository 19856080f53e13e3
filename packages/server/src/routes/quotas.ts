/** Quotas: an organisation reads its own limits and use; the install's admin reads and sets anyone's. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { IdParams, OrganisationQuotas, QuotaOverrides, WarrenError } from '@warren/protocol';
import { DEFAULT_ORG, type Principal } from '../auth';
import type { AppContext } from '../context';
import { errors } from './responses';

export const quotaRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    /**
     * The organisation, for the install's admin; with `readOwn`, also an admin key
     * of that organisation. Another organisation does not exist for other keys
     * (404, never 403); their own gets MISSING_SCOPE where only the install's admin may act.
     */
    async function adminOrg(p: Principal, id: string, readOwn = false): Promise<string> {
      if (readOwn && id === p.orgId) return id;
      if (!p.installAdmin && id !== p.orgId)
        throw new WarrenError('ORGANISATION_NOT_FOUND', `organisation ${id} does not exist`);
      if (!p.installAdmin)
        throw new WarrenError(
          'MISSING_SCOPE',
          `quotas of organisations are set with an admin key of ${DEFAULT_ORG}: this key lacks the scope admin there`,
          { missing_scope: 'admin' },
        );
      if (!(await ctx.keys.queries.organisation(id)))
        throw new WarrenError('ORGANISATION_NOT_FOUND', `organisation ${id} does not exist`);
      return id;
    }

    app.get(
      '/v1/quotas',
      {
        schema: {
          tags: ['quotas'],
          summary: "Your organisation's quotas and what it uses now",
          response: { 200: OrganisationQuotas, ...errors },
        },
      },
      async (req) => ctx.quotas.view(req.principal!.orgId),
    );

    app.get(
      '/v1/orgs/:id/quotas',
      {
        schema: {
          tags: ['quotas'],
          summary:
            "An organisation's quotas, overrides and use (the install's admin, or an admin key of that organisation)",
          params: IdParams,
          response: { 200: OrganisationQuotas, ...errors },
        },
      },
      async (req) => ctx.quotas.view(await adminOrg(req.principal!, req.params.id, true)),
    );

    app.put(
      '/v1/orgs/:id/quotas',
      {
        schema: {
          tags: ['quotas'],
          summary:
            "Set an organisation's quota overrides (the install's admin only): fields left out take the install defaults, null is unlimited",
          params: IdParams,
          body: QuotaOverrides,
          response: { 200: OrganisationQuotas, ...errors },
        },
      },
      async (req) => {
        const orgId = await adminOrg(req.principal!, req.params.id);
        req.auditResource = { type: 'organisation', id: orgId };
        await ctx.quotas.setOverrides(orgId, req.body);
        return ctx.quotas.view(orgId);
      },
    );
  };
