/**
 * Bearer-token auth. Tokens are `wrn_` + 40 random characters, stored as
 * sha256 hashes; the admin token is generated at first start and written to
 * $WARREN_HOME/admin-token (mode 0600) where the CLI and SDK find it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { WarrenError, newApiToken, newId } from '@warren/protocol';
import type { Store } from './store/store';

export const DEFAULT_ORG = 'org_default';

export interface Principal {
  tokenId: string;
  orgId: string;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Returns the admin token, creating it (and the default organisation) on first start. */
export async function ensureAdminToken(store: Store, tokenFile: string): Promise<string> {
  await store.ensureOrganisation(DEFAULT_ORG, 'default');
  if (existsSync(tokenFile)) {
    const token = readFileSync(tokenFile, 'utf8').trim();
    if (await store.findToken(hashToken(token))) return token;
  }
  const token = newApiToken();
  await store.insertToken({
    id: newId('token'),
    orgId: DEFAULT_ORG,
    name: 'admin',
    hash: hashToken(token),
  });
  writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  return token;
}

export async function authenticate(store: Store, header: string | undefined): Promise<Principal> {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? '');
  if (!match?.[1])
    throw new WarrenError(
      'UNAUTHORIZED',
      'missing bearer token: send Authorization: Bearer <token>',
    );
  const found = await store.findToken(hashToken(match[1]));
  if (!found) throw new WarrenError('UNAUTHORIZED', 'invalid or revoked token');
  return { tokenId: found.id, orgId: found.org_id };
}
