/**
 * Bearer-token auth. Keys are `wrn_` + 40 random characters, stored as
 * sha256 hashes; the admin token is generated at first start and written to
 * $WARREN_HOME/admin-token (mode 0600) where the CLI and SDK find it. Scoped
 * keys are made through the API (./keys).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { newApiToken, newId, type Scope } from '@warren/protocol';
import type { Restriction } from './keys/restriction';
import type { Store } from './store/store';

export const DEFAULT_ORG = 'org_default';

/** Who calls: the key, its organisation, what it may do and which sandboxes it sees. */
export interface Principal {
  tokenId: string;
  orgId: string;
  scopes: Scope[];
  restriction: Restriction;
  /** An `admin` key of the install's own organisation: it manages organisations and official templates. */
  installAdmin: boolean;
  /** When the key stops working; keys it makes cannot outlive it. */
  expiresAt: string | null;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** What a key shows of itself in listings: the prefix and 8 characters. */
export function keyPrefix(token: string): string {
  return token.slice(0, 12);
}

/** Returns the admin token, creating it (and the default organisation) on first start. */
export async function ensureAdminToken(store: Store, tokenFile: string): Promise<string> {
  await store.ensureOrganisation(DEFAULT_ORG, 'default');
  if (existsSync(tokenFile)) {
    const token = readFileSync(tokenFile, 'utf8').trim();
    const found = await store.findToken(hashToken(token));
    if (found) {
      await store.setTokenPrefix(found.id, keyPrefix(token));
      return token;
    }
  }
  const token = newApiToken();
  await store.insertToken({
    id: newId('token'),
    orgId: DEFAULT_ORG,
    name: 'admin',
    hash: hashToken(token),
    prefix: keyPrefix(token),
  });
  writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  return token;
}
