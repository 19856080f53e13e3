/**
 * What a principal may see: every lookup is filtered by organisation already;
 * on top of that a restricted key sees only the sandboxes that match its
 * restriction, and snapshots of those. Whatever it may not see is 404.
 */
import { WarrenError } from '@warren/protocol';
import type { Principal } from '../auth';
import type { SnapshotRecord, Store } from '../store/store';
import { isRestricted, matchesSandbox } from './restriction';

export async function maySeeSandbox(store: Store, p: Principal, id: string): Promise<boolean> {
  if (!isRestricted(p.restriction)) return true;
  const row = await store.getSandbox(p.orgId, id);
  return row !== undefined && matchesSandbox(p.restriction, row);
}

/** The items whose sandbox the principal may see (snapshot lists of a restricted key). */
export async function visibleOf<T extends { sandbox_id: string }>(
  store: Store,
  p: Principal,
  items: T[],
): Promise<T[]> {
  if (!isRestricted(p.restriction)) return items;
  const seen = await Promise.all(items.map((i) => maySeeSandbox(store, p, i.sandbox_id)));
  return items.filter((_, n) => seen[n]);
}

/** Throws SANDBOX_NOT_FOUND unless the sandbox is in the principal's organisation and restriction. */
export async function checkSandboxAccess(store: Store, p: Principal, id: string): Promise<void> {
  if (!(await maySeeSandbox(store, p, id)))
    throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
}

/**
 * The list filter of a restricted key: its labels added to the asked ones and
 * its one sandbox id; null when the asked labels contradict its own (nothing matches).
 */
export function listFilter(
  p: Principal,
  metadata: Record<string, string>,
): { metadata: Record<string, string>; ids?: string[] } | null {
  const { sandboxId, labels } = p.restriction;
  const merged = { ...metadata };
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (k in merged && merged[k] !== v) return null;
    merged[k] = v;
  }
  return sandboxId !== null ? { metadata: merged, ids: [sandboxId] } : { metadata: merged };
}

/** A restricted key sees a snapshot only while its sandbox exists and matches. */
export async function maySeeSnapshot(
  store: Store,
  p: Principal,
  snap: SnapshotRecord,
): Promise<boolean> {
  return snap.org_id === p.orgId && maySeeSandbox(store, p, snap.sandbox_id);
}

export async function checkSnapshotAccess(store: Store, p: Principal, id: string): Promise<void> {
  if (!isRestricted(p.restriction)) return;
  const snap = await store.getSnapshot(p.orgId, id);
  if (!snap || !(await maySeeSnapshot(store, p, snap)))
    throw new WarrenError('SNAPSHOT_NOT_FOUND', `snapshot ${id} does not exist`);
}
