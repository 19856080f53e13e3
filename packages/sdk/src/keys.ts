/** Scoped API keys and organisations. A new key's secret is in the create answer only. */
import type { ApiKey, CreateKeyRequest, CreatedKey, Organisation, Scope } from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

export { SCOPES } from '@warren/protocol';

export interface CreateKeyOptions {
  scopes: Scope[];
  /** When the key stops working (ISO 8601), or `ttlSeconds` from now. */
  expiresAt?: string;
  ttlSeconds?: number;
  /** Only this sandbox. */
  sandboxId?: string;
  /** Only sandboxes with these labels; its creates must carry them. */
  sandboxLabels?: Record<string, string>;
  /** A key of another organisation (the install's admin only). */
  orgId?: string;
}

export const Keys = {
  create(name: string, o: CreateKeyOptions, opts: ConnectionOptions = {}): Promise<CreatedKey> {
    const json: CreateKeyRequest = {
      name,
      scopes: o.scopes,
      ...(o.expiresAt !== undefined && { expires_at: o.expiresAt }),
      ...(o.ttlSeconds !== undefined && { ttl_seconds: o.ttlSeconds }),
      ...(o.sandboxId !== undefined && { sandbox_id: o.sandboxId }),
      ...(o.sandboxLabels !== undefined && { sandbox_labels: o.sandboxLabels }),
      ...(o.orgId !== undefined && { org_id: o.orgId }),
    };
    return new HttpClient(opts).json('POST', '/v1/keys', { json });
  },

  async list(opts: ConnectionOptions = {}): Promise<ApiKey[]> {
    return (await new HttpClient(opts).json<{ items: ApiKey[] }>('GET', '/v1/keys')).items;
  },

  /** Revokes a key: it stops working at once. */
  async revoke(id: string, opts: ConnectionOptions = {}): Promise<void> {
    await new HttpClient(opts).json('DELETE', `/v1/keys/${encodeURIComponent(id)}`);
  },
};

export const Organisations = {
  create(name: string, opts: ConnectionOptions = {}): Promise<Organisation> {
    return new HttpClient(opts).json('POST', '/v1/orgs', { json: { name } });
  },

  async list(opts: ConnectionOptions = {}): Promise<Organisation[]> {
    return (await new HttpClient(opts).json<{ items: Organisation[] }>('GET', '/v1/orgs')).items;
  },
};
