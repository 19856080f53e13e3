/**
 * Configuration of identity and limits (WARREN_JWT_*, WARREN_AUTH_FAIL_*,
 * WARREN_TLS*, WARREN_QUOTA_*), kept apart from ./config.ts, which spreads it in.
 */
import type { QuotaLimits } from '@warren/protocol';

export interface JwtConfig {
  /** The provider's JWKS document (WARREN_JWT_JWKS_URL). */
  jwksUrl: string;
  issuer: string;
  audience: string;
  /** Claim naming the organisation id (default `org`). */
  orgClaim: string;
  /** Claim with the scopes: a space-separated string or an array (default `scope`). */
  scopesClaim: string;
  /** Claim restricting the token to one sandbox id (unset: none). */
  sandboxClaim: string | null;
  /** Claim (an object of strings) restricting the token to sandboxes with these labels. */
  labelsClaim: string | null;
  /** Least time between two JWKS fetches for an unknown kid. */
  jwksCooldownMs: number;
}

export interface AuthFailureConfig {
  /** Failed authentications from one address within the window before it is blocked; 0: never. */
  limit: number;
  windowSeconds: number;
  /** How long a blocked address gets 429. */
  blockSeconds: number;
}

/** Files of the API's certificate chain and key, or `auto` (issued by the install's CA for `names` too). */
export type TlsConfig =
  { kind: 'files'; certFile: string; keyFile: string } | { kind: 'auto'; names: string[] };

export interface AuthConfig {
  jwt: JwtConfig | null;
  authFailures: AuthFailureConfig;
  tls: TlsConfig | null;
  /** Every organisation's quotas unless it has overrides. */
  quotaDefaults: QuotaLimits;
}

function num(env: NodeJS.ProcessEnv, name: string, fallback: number | null): number | null {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  if (value === 'unlimited') return null;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number >= 0, not ${value}`);
  return n;
}

function jwtConfig(env: NodeJS.ProcessEnv): JwtConfig | null {
  const jwksUrl = env.WARREN_JWT_JWKS_URL;
  if (!jwksUrl) return null;
  const issuer = env.WARREN_JWT_ISSUER;
  const audience = env.WARREN_JWT_AUDIENCE;
  if (!issuer || !audience)
    throw new Error('WARREN_JWT_JWKS_URL needs WARREN_JWT_ISSUER and WARREN_JWT_AUDIENCE too');
  return {
    jwksUrl,
    issuer,
    audience,
    orgClaim: env.WARREN_JWT_ORG_CLAIM || 'org',
    scopesClaim: env.WARREN_JWT_SCOPES_CLAIM || 'scope',
    sandboxClaim: env.WARREN_JWT_SANDBOX_CLAIM || null,
    labelsClaim: env.WARREN_JWT_LABELS_CLAIM || null,
    jwksCooldownMs: (num(env, 'WARREN_JWT_JWKS_COOLDOWN_SECONDS', 30) ?? 30) * 1000,
  };
}

function tlsConfig(env: NodeJS.ProcessEnv): TlsConfig | null {
  const cert = env.WARREN_TLS_CERT;
  const key = env.WARREN_TLS_KEY;
  if (env.WARREN_TLS === 'auto')
    return { kind: 'auto', names: (env.WARREN_TLS_NAMES ?? '').split(',').filter(Boolean) };
  if (env.WARREN_TLS && env.WARREN_TLS !== 'off')
    throw new Error(`WARREN_TLS must be auto or off, not ${JSON.stringify(env.WARREN_TLS)}`);
  if (!cert && !key) return null;
  if (!cert || !key) throw new Error('WARREN_TLS_CERT and WARREN_TLS_KEY go together');
  return { kind: 'files', certFile: cert, keyFile: key };
}

const int = (env: NodeJS.ProcessEnv, name: string) => {
  const n = num(env, name, null);
  return n === null ? null : Math.floor(n);
};

export function loadAuthConfig(env: NodeJS.ProcessEnv): AuthConfig {
  return {
    jwt: jwtConfig(env),
    authFailures: {
      limit: num(env, 'WARREN_AUTH_FAIL_LIMIT', 20) ?? 0,
      windowSeconds: num(env, 'WARREN_AUTH_FAIL_WINDOW_SECONDS', 60) ?? 60,
      blockSeconds: num(env, 'WARREN_AUTH_FAIL_BLOCK_SECONDS', 60) ?? 60,
    },
    tls: tlsConfig(env),
    quotaDefaults: {
      sandboxes: int(env, 'WARREN_QUOTA_SANDBOXES'),
      memory_mb: int(env, 'WARREN_QUOTA_MEMORY_MB'),
      disk_mb: int(env, 'WARREN_QUOTA_DISK_MB'),
      databases: int(env, 'WARREN_QUOTA_DATABASES'),
      snapshot_bytes: int(env, 'WARREN_QUOTA_SNAPSHOT_BYTES'),
      creates_burst: int(env, 'WARREN_QUOTA_CREATES_BURST'),
      creates_per_second: num(env, 'WARREN_QUOTA_CREATES_PER_SECOND', null),
    },
  };
}
