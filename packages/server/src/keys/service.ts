/**
 * API keys and organisations: authenticating a bearer key, making keys no
 * wider than the caller's own, listing and revoking them. A revoked key stops
 * working at the next request: every request looks its hash up.
 */
import {
  WarrenError,
  newApiToken,
  newId,
  type ApiKey,
  type CreateKeyRequest,
  type CreateOrganisationRequest,
  type CreatedKey,
  type Organisation,
} from '@warren/protocol';
import { DEFAULT_ORG, hashToken, keyPrefix, type Principal } from '../auth';
import { KeyQueries, type KeyRow } from '../store/keys';
import type { Store } from '../store/store';
import type { AuthFailureConfig, JwtConfig } from '../auth-config';
import { AuthFailureLimiter } from './failures';
import { JwtVerifier, looksLikeJwt } from './jwt';
import { restrictionWithin, type Restriction } from './restriction';
import { hasScope, parseScopes, requireScopes } from './scopes';

/** last_used_at is written at most this often per key. */
const TOUCH_INTERVAL_MS = 60_000;

function parseLabels(json: string | null): Record<string, string> | null {
  if (!json) return null;
  const labels = JSON.parse(json) as Record<string, string>;
  return Object.keys(labels).length ? labels : null;
}

export function restrictionOf(row: Pick<KeyRow, 'sandbox_id' | 'sandbox_labels'>): Restriction {
  return { sandboxId: row.sandbox_id, labels: parseLabels(row.sandbox_labels) };
}

export function isExpired(expiresAt: string | null, now = Date.now()): boolean {
  return expiresAt !== null && Date.parse(expiresAt) <= now;
}

/** The expiry of a new key: `expires_at` or now + `ttl_seconds`, never past the creator's own. */
export function newKeyExpiry(
  req: Pick<CreateKeyRequest, 'expires_at' | 'ttl_seconds'>,
  creatorExpiry: string | null,
  now = Date.now(),
): string | null {
  if (req.expires_at !== undefined && req.ttl_seconds !== undefined)
    throw new WarrenError('INVALID_REQUEST', 'give expires_at or ttl_seconds, not both');
  let at: number | null = null;
  if (req.expires_at !== undefined) {
    at = Date.parse(req.expires_at);
    if (Number.isNaN(at)) throw new WarrenError('INVALID_REQUEST', 'expires_at is not a date');
    if (at <= now) throw new WarrenError('INVALID_REQUEST', 'expires_at is in the past');
  } else if (req.ttl_seconds !== undefined) at = now + req.ttl_seconds * 1000;
  if (creatorExpiry !== null) {
    const limit = Date.parse(creatorExpiry);
    if (at === null) at = limit;
    else if (at > limit)
      throw new WarrenError(
        'KEY_RESTRICTED',
        `this key expires at ${creatorExpiry}: a key it makes cannot outlive it`,
      );
  }
  return at === null ? null : new Date(at).toISOString();
}

export class KeyService {
  readonly queries: KeyQueries;
  private readonly touched = new Map<string, number>();
  private readonly jwt: JwtVerifier | null;
  /** Failed authentications per client address (the access hooks use it). */
  readonly failures: AuthFailureLimiter;

  constructor(
    private readonly store: Store,
    jwt: JwtConfig | null = null,
    failures: AuthFailureConfig = { limit: 0, windowSeconds: 60, blockSeconds: 60 },
  ) {
    this.queries = new KeyQueries(store.db);
    this.jwt = jwt ? new JwtVerifier(jwt, this.queries) : null;
    this.failures = new AuthFailureLimiter(failures);
  }

  /** authenticate(), refused while `address` is blocked for failures, and counting its failures. */
  async authenticateFrom(address: string, header: string | undefined): Promise<Principal> {
    this.failures.check(address);
    try {
      return await this.authenticate(header);
    } catch (err) {
      if (err instanceof WarrenError && err.code === 'UNAUTHORIZED') this.failures.fail(address);
      throw err;
    }
  }

  async authenticate(header: string | undefined): Promise<Principal> {
    const match = /^Bearer\s+(\S+)$/i.exec(header ?? '');
    if (!match?.[1])
      throw new WarrenError(
        'UNAUTHORIZED',
        'missing bearer token: send Authorization: Bearer <token>',
      );
    // A JWT goes to the provider's keys; `wrn_` keys (and anything else) to the store.
    if (this.jwt && looksLikeJwt(match[1])) return this.jwt.authenticate(match[1]);
    const row = await this.queries.byHash(hashToken(match[1]));
    if (!row) throw new WarrenError('UNAUTHORIZED', 'invalid or revoked token');
    if (isExpired(row.expires_at))
      throw new WarrenError('UNAUTHORIZED', `key ${row.id} expired at ${row.expires_at}`);
    await this.touch(row.id);
    const scopes = parseScopes(row.scopes);
    return {
      tokenId: row.id,
      orgId: row.org_id,
      scopes,
      restriction: restrictionOf(row),
      installAdmin: row.org_id === DEFAULT_ORG && scopes.includes('admin'),
      expiresAt: row.expires_at,
    };
  }

  private async touch(id: string): Promise<void> {
    const now = Date.now();
    if (now - (this.touched.get(id) ?? 0) < TOUCH_INTERVAL_MS) return;
    this.touched.set(id, now);
    await this.queries.touch(id, new Date(now).toISOString());
  }

  toApi(row: KeyRow): ApiKey {
    return {
      id: row.id,
      org_id: row.org_id,
      name: row.name,
      prefix: row.prefix ?? 'wrn_',
      scopes: parseScopes(row.scopes),
      sandbox_id: row.sandbox_id,
      sandbox_labels: parseLabels(row.sandbox_labels),
      created_at: row.created_at,
      created_by: row.created_by,
      expires_at: row.expires_at,
      last_used_at: row.last_used_at,
    };
  }

  async create(p: Principal, req: CreateKeyRequest): Promise<CreatedKey> {
    const orgId = req.org_id ?? p.orgId;
    if (orgId !== p.orgId && !p.installAdmin)
      throw new WarrenError('ORGANISATION_NOT_FOUND', `organisation ${orgId} does not exist`);
    if (!(await this.queries.organisation(orgId)))
      throw new WarrenError('ORGANISATION_NOT_FOUND', `organisation ${orgId} does not exist`);
    requireScopes(p.scopes, req.scopes);
    const labels = req.sandbox_labels && Object.keys(req.sandbox_labels).length > 0;
    const inner: Restriction = {
      sandboxId: req.sandbox_id ?? null,
      labels: labels ? req.sandbox_labels! : null,
    };
    if (!restrictionWithin(p.restriction, inner))
      throw new WarrenError(
        'KEY_RESTRICTED',
        'a key can only make keys restricted at least as narrowly as itself',
      );
    if (inner.sandboxId !== null && !(await this.store.getSandbox(orgId, inner.sandboxId)))
      throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${inner.sandboxId} does not exist`);
    const token = newApiToken();
    const row: KeyRow = {
      id: newId('token'),
      org_id: orgId,
      name: req.name,
      token_hash: hashToken(token),
      created_at: new Date().toISOString(),
      last_used_at: null,
      revoked_at: null,
      scopes: JSON.stringify(req.scopes),
      prefix: keyPrefix(token),
      sandbox_id: inner.sandboxId,
      sandbox_labels: inner.labels ? JSON.stringify(inner.labels) : null,
      expires_at: newKeyExpiry(req, p.expiresAt),
      created_by: p.tokenId,
    };
    await this.queries.insert(row);
    return { ...this.toApi(row), key: token };
  }

  /** Admin keys see every key of their organisation; others their own and the ones they made. */
  async list(p: Principal): Promise<ApiKey[]> {
    const rows = await this.queries.list(p.orgId);
    return rows.filter((r) => this.mayManage(p, r)).map((r) => this.toApi(r));
  }

  private mayManage(p: Principal, row: KeyRow): boolean {
    return hasScope(p.scopes, 'admin') || row.id === p.tokenId || row.created_by === p.tokenId;
  }

  async revoke(p: Principal, id: string): Promise<void> {
    const row = await this.queries.get(p.orgId, id);
    if (!row || !this.mayManage(p, row))
      throw new WarrenError('KEY_NOT_FOUND', `key ${id} does not exist`);
    await this.queries.revoke(id, new Date().toISOString());
    this.touched.delete(id);
  }

  async createOrganisation(p: Principal, req: CreateOrganisationRequest): Promise<Organisation> {
    if (!p.installAdmin)
      throw new WarrenError(
        'MISSING_SCOPE',
        `creating organisations needs an admin key of ${DEFAULT_ORG}: this key lacks the scope admin there`,
        { missing_scope: 'admin' },
      );
    const org = { id: newId('organisation'), name: req.name, created_at: new Date().toISOString() };
    await this.queries.insertOrganisation(org);
    return org;
  }

  /**
   * The organisation whose audit log a caller reads: its own, or with `orgId`
   * another one for the install's admin. Naming any other is 404, as if it did
   * not exist.
   */
  async auditOrganisation(p: Principal, orgId: string | undefined): Promise<string> {
    if (orgId === undefined || orgId === p.orgId) return p.orgId;
    if (!p.installAdmin || !(await this.queries.organisation(orgId)))
      throw new WarrenError('ORGANISATION_NOT_FOUND', `organisation ${orgId} does not exist`);
    return orgId;
  }

  async listOrganisations(p: Principal): Promise<Organisation[]> {
    if (p.installAdmin) return this.queries.organisations();
    const own = await this.queries.organisation(p.orgId);
    return own ? [own] : [];
  }
}
