/**
 * Restrictions of a key to some sandboxes: one sandbox by id, or every
 * sandbox whose metadata carries a set of labels. Sandboxes outside a key's
 * restriction do not exist for it (SANDBOX_NOT_FOUND); creates it may not
 * make are KEY_RESTRICTED.
 */
import { WarrenError } from '@warren/protocol';

export interface Restriction {
  sandboxId: string | null;
  labels: Record<string, string> | null;
}

export const UNRESTRICTED: Restriction = { sandboxId: null, labels: null };

export function isRestricted(r: Restriction): boolean {
  return r.sandboxId !== null || r.labels !== null;
}

export function labelsMatch(
  wanted: Record<string, string> | null,
  metadata: Record<string, string> | undefined,
): boolean {
  if (!wanted) return true;
  return Object.entries(wanted).every(([k, v]) => metadata?.[k] === v);
}

/** Whether a key with this restriction may see the sandbox. */
export function matchesSandbox(
  r: Restriction,
  sandbox: { id: string; metadata: Record<string, string> },
): boolean {
  if (r.sandboxId !== null && sandbox.id !== r.sandboxId) return false;
  return labelsMatch(r.labels, sandbox.metadata);
}

/** Throws KEY_RESTRICTED unless a key with this restriction may create a sandbox with these labels. */
export function checkCreate(r: Restriction, metadata: Record<string, string> | undefined): void {
  if (r.sandboxId !== null)
    throw new WarrenError(
      'KEY_RESTRICTED',
      `this key is restricted to sandbox ${r.sandboxId}: it cannot create sandboxes`,
    );
  checkLabels(r, metadata, 'the sandbox must carry these labels');
}

/** Throws KEY_RESTRICTED (saying `why`) unless the metadata carries the key's labels. */
export function checkLabels(
  r: Restriction,
  metadata: Record<string, string> | undefined,
  why: string,
): void {
  if (!labelsMatch(r.labels, metadata))
    throw new WarrenError(
      'KEY_RESTRICTED',
      `this key is restricted to sandboxes labelled ${JSON.stringify(r.labels)}: ${why}`,
    );
}

/**
 * Whether `inner` allows no sandbox that `outer` does not: a key may only make
 * keys within its own. Both parts of a restriction apply together, so an inner
 * key must keep the outer sandbox id and at least the outer labels.
 */
export function restrictionWithin(outer: Restriction, inner: Restriction): boolean {
  if (outer.sandboxId !== null && inner.sandboxId !== outer.sandboxId) return false;
  if (outer.labels === null) return true;
  return inner.labels !== null && labelsMatch(outer.labels, inner.labels);
}
