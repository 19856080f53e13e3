/** Quotas of organisations: your own limits and use; the install's admin reads and sets anyone's. */
import type { OrganisationQuotas, QuotaOverrides } from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

export type { OrganisationQuotas, QuotaOverrides };

const path = (orgId: string) => `/v1/orgs/${encodeURIComponent(orgId)}/quotas`;

export const Quotas = {
  /** Your organisation's limits, overrides and current use; with `orgId`, another's (install admin). */
  get(orgId?: string, opts: ConnectionOptions = {}): Promise<OrganisationQuotas> {
    return new HttpClient(opts).json('GET', orgId ? path(orgId) : '/v1/quotas');
  },

  /** Replaces an organisation's overrides (install admin): left out is the default, null unlimited. */
  set(
    orgId: string,
    overrides: QuotaOverrides,
    opts: ConnectionOptions = {},
  ): Promise<OrganisationQuotas> {
    return new HttpClient(opts).json('PUT', path(orgId), { json: overrides });
  },
};
