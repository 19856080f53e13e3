/**
 * Scope checks. A key holds a list of scopes (resource:action); `admin`
 * implies every scope. A route needs all the scopes it declares
 * (./route-scopes.ts).
 */
import { SCOPES, WarrenError, type Scope } from '@warren/protocol';

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

export function hasScope(held: readonly Scope[], needed: Scope): boolean {
  return held.includes('admin') || held.includes(needed);
}

/** The first of `needed` that `held` does not cover, or null. */
export function missingScope(held: readonly Scope[], needed: readonly Scope[]): Scope | null {
  return needed.find((s) => !hasScope(held, s)) ?? null;
}

/** Throws MISSING_SCOPE naming the first scope the key lacks. */
export function requireScopes(held: readonly Scope[], needed: readonly Scope[]): void {
  const missing = missingScope(held, needed);
  if (missing)
    throw new WarrenError('MISSING_SCOPE', `this key lacks the scope ${missing}`, {
      missing_scope: missing,
    });
}

/** Parses the stored JSON list, dropping names this version does not know. */
export function parseScopes(json: string): Scope[] {
  try {
    const list: unknown = JSON.parse(json);
    return Array.isArray(list) ? list.filter((s): s is Scope => isScope(String(s))) : [];
  } catch {
    return [];
  }
}
