/**
 * Bearer JWTs from an OIDC provider, verified against its JWKS with `jose`.
 * jose was chosen because its remote key set caches the provider's keys and
 * fetches them again when a token names a kid it has not seen (so key rotation
 * at the provider needs nothing here), and it checks signature, expiry,
 * not-before, issuer and audience in one call. The organisation, scopes and an
 * optional restriction come from claims; whatever fails is UNAUTHORIZED.
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import { WarrenError, type Scope } from '@warren/protocol';
import { DEFAULT_ORG, type Principal } from '../auth';
import type { JwtConfig } from '../auth-config';
import type { KeyQueries } from '../store/keys';
import { UNRESTRICTED, type Restriction } from './restriction';
import { isScope } from './scopes';

/** OIDC scopes providers add to every token; they grant nothing here and are ignored. */
const OIDC_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access', 'phone', 'address']);

/** Three base64url parts: a compact JWS. `wrn_` keys never look like this. */
export function looksLikeJwt(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);
}

const unauthorized = (why: string) => new WarrenError('UNAUTHORIZED', `invalid JWT: ${why}`);

function describe(err: unknown, config: JwtConfig): WarrenError {
  if (err instanceof WarrenError) return err;
  if (err instanceof errors.JWTExpired) return unauthorized('the token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return unauthorized('the token is not valid yet');
    if (err.claim === 'iss') return unauthorized(`the issuer is not ${config.issuer}`);
    if (err.claim === 'aud') return unauthorized(`the audience is not ${config.audience}`);
    return unauthorized(`claim ${err.claim} is not valid (${err.reason})`);
  }
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return unauthorized('the signature does not verify');
  if (err instanceof errors.JWKSNoMatchingKey)
    return unauthorized("no key of the provider's JWKS matches the token");
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid)
    return unauthorized("the provider's JWKS could not be fetched");
  if (err instanceof errors.JOSEError) return unauthorized(err.message);
  return unauthorized("the provider's JWKS could not be fetched");
}

function scopesOf(payload: JWTPayload, claim: string): Scope[] {
  const raw = payload[claim];
  const list = typeof raw === 'string' ? raw.split(' ').filter(Boolean) : raw;
  if (!Array.isArray(list)) throw unauthorized(`claim ${claim} (the scopes) is missing`);
  const scopes: Scope[] = [];
  for (const s of list) {
    if (typeof s !== 'string') throw unauthorized(`claim ${claim} holds a non-string`);
    if (OIDC_SCOPES.has(s)) continue;
    if (!isScope(s)) throw unauthorized(`unknown scope ${JSON.stringify(s)} in claim ${claim}`);
    if (!scopes.includes(s)) scopes.push(s);
  }
  return scopes;
}

function restrictionOf(payload: JWTPayload, config: JwtConfig): Restriction {
  if (!config.sandboxClaim && !config.labelsClaim) return UNRESTRICTED;
  const id = config.sandboxClaim ? payload[config.sandboxClaim] : undefined;
  if (id !== undefined && typeof id !== 'string')
    throw unauthorized(`claim ${config.sandboxClaim} (a sandbox id) is not a string`);
  const labels = config.labelsClaim ? payload[config.labelsClaim] : undefined;
  const valid =
    labels === undefined ||
    (typeof labels === 'object' &&
      labels !== null &&
      !Array.isArray(labels) &&
      Object.values(labels).every((v) => typeof v === 'string'));
  if (!valid)
    throw unauthorized(`claim ${config.labelsClaim} (labels) is not an object of strings`);
  const hasLabels = labels !== undefined && Object.keys(labels).length > 0;
  return {
    sandboxId: id ?? null,
    labels: hasLabels ? (labels as Record<string, string>) : null,
  };
}

export class JwtVerifier {
  private readonly jwks: ReturnType<typeof createRemoteJWKSet>;

  constructor(
    private readonly config: JwtConfig,
    private readonly queries: KeyQueries,
  ) {
    this.jwks = createRemoteJWKSet(new URL(config.jwksUrl), {
      cooldownDuration: config.jwksCooldownMs,
      timeoutDuration: 5000,
    });
  }

  async authenticate(token: string): Promise<Principal> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.jwks, {
        issuer: this.config.issuer,
        audience: this.config.audience,
        clockTolerance: 5,
        requiredClaims: ['sub', 'exp'],
      }));
    } catch (err) {
      throw describe(err, this.config);
    }
    const orgId = payload[this.config.orgClaim];
    if (typeof orgId !== 'string' || orgId === '')
      throw unauthorized(`claim ${this.config.orgClaim} (the organisation) is missing`);
    if (!(await this.queries.organisation(orgId)))
      throw unauthorized(`organisation ${orgId} does not exist`);
    const scopes = scopesOf(payload, this.config.scopesClaim);
    return {
      tokenId: `jwt:${payload.iss}#${payload.sub}`,
      orgId,
      scopes,
      restriction: restrictionOf(payload, this.config),
      installAdmin: orgId === DEFAULT_ORG && scopes.includes('admin'),
      expiresAt: new Date(payload.exp! * 1000).toISOString(),
    };
  }
}
