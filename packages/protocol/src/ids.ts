import { randomBytes } from 'node:crypto';

/** Every resource id carries a type prefix so a stray id (or a leaked token) is recognisable. */
export const ID_PREFIX = {
  sandbox: 'sbx',
  snapshot: 'snap',
  volume: 'vol',
  template: 'tpl',
  organisation: 'org',
  token: 'tok',
  request: 'req',
  host: 'host',
  database: 'db',
  webhook: 'wh',
  message: 'msg',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Random base-36 text; 16 characters carry about 82 bits. */
export function randomText(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += ALPHABET[b % 36];
  return out;
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIX[kind]}_${randomText(16)}`;
}

export function hasPrefix(id: string, kind: IdKind): boolean {
  return id.startsWith(`${ID_PREFIX[kind]}_`);
}

/** API tokens: `wrn_` plus 40 random characters (about 206 bits). */
export const TOKEN_PREFIX = 'wrn_';

export function newApiToken(): string {
  return TOKEN_PREFIX + randomText(40);
}
