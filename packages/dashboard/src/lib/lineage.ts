/**
 * The lineage of a sandbox drawn as a tree: sandboxes descend from their
 * parent_id, snapshots hang under the sandbox they were captured from, and a
 * sandbox started from a snapshot descends from that snapshot. Pure, unit-tested.
 */

export interface LineageSandbox {
  id: string;
  state: string;
  parent_id: string | null;
  snapshot_id: string | null;
  lineage: string[];
  fork_kind: string | null;
  created_at: string;
}

export interface LineageSnapshot {
  id: string;
  sandbox_id: string;
  created_at: string;
}

export interface LineageNode {
  kind: 'sandbox' | 'snapshot' | 'missing';
  id: string;
  /** The sandbox or snapshot; null for an ancestor whose record is gone. */
  sandbox: LineageSandbox | null;
  snapshot: LineageSnapshot | null;
  children: LineageNode[];
}

/** The root of the line a sandbox belongs to: its first ancestor, or itself. */
export function lineRoot(sbx: Pick<LineageSandbox, 'id' | 'lineage'>): string {
  return sbx.lineage[0] ?? sbx.id;
}

/**
 * The tree of the line of `focus`, from everything known. Ancestors whose
 * records were purged appear as `missing` nodes so the shape stays true.
 */
export function buildLineage(
  focus: LineageSandbox,
  sandboxes: LineageSandbox[],
  snapshots: LineageSnapshot[],
): LineageNode {
  const root = lineRoot(focus);
  const byId = new Map<string, LineageSandbox>();
  for (const s of [...sandboxes, focus]) byId.set(s.id, s);
  const members = [...byId.values()].filter((s) => lineRoot(s) === root);
  const memberIds = new Set(members.map((s) => s.id));
  const nodes = new Map<string, LineageNode>();
  const node = (kind: LineageNode['kind'], id: string): LineageNode => {
    const key = `${kind === 'snapshot' ? 'snap' : 'sbx'}:${id}`;
    let n = nodes.get(key);
    if (!n) {
      n = { kind, id, sandbox: byId.get(id) ?? null, snapshot: null, children: [] };
      nodes.set(key, n);
    }
    return n;
  };
  // Every ancestor a member names is in the tree, known or not.
  for (const s of members)
    for (const a of [...s.lineage, s.id]) node(byId.has(a) ? 'sandbox' : 'missing', a);
  const snapOf = new Map<string, LineageNode>();
  for (const snap of snapshots) {
    if (!memberIds.has(snap.sandbox_id) && !nodes.has(`sbx:${snap.sandbox_id}`)) continue;
    const n = node('snapshot', snap.id);
    n.snapshot = snap;
    snapOf.set(snap.id, n);
    node(byId.has(snap.sandbox_id) ? 'sandbox' : 'missing', snap.sandbox_id).children.push(n);
  }
  const attached = new Set<string>();
  for (const s of members) {
    const n = node('sandbox', s.id);
    const viaSnapshot = s.snapshot_id ? snapOf.get(s.snapshot_id) : undefined;
    const parentId = s.parent_id ?? s.lineage[s.lineage.length - 1] ?? null;
    if (viaSnapshot) viaSnapshot.children.push(n);
    else if (parentId) node(byId.has(parentId) ? 'sandbox' : 'missing', parentId).children.push(n);
    attached.add(s.id);
  }
  // Missing ancestors chain to the ancestor before them in any member's lineage.
  for (const s of members) {
    s.lineage.forEach((a, i) => {
      if (byId.has(a) || attached.has(a) || i === 0) return;
      const prev = s.lineage[i - 1];
      if (!prev) return;
      node(byId.has(prev) ? 'sandbox' : 'missing', prev).children.push(node('missing', a));
      attached.add(a);
    });
  }
  const sortTree = (n: LineageNode): LineageNode => {
    const seen = new Set<LineageNode>();
    n.children = n.children.filter((c) => !seen.has(c) && seen.add(c));
    n.children.sort((a, b) => created(a).localeCompare(created(b)) || a.id.localeCompare(b.id));
    n.children.forEach(sortTree);
    return n;
  };
  return sortTree(node(byId.has(root) ? 'sandbox' : 'missing', root));
}

function created(n: LineageNode): string {
  return n.sandbox?.created_at ?? n.snapshot?.created_at ?? '';
}

/** Every node of a tree, depth first: for counting and for tests. */
export function flatten(n: LineageNode, depth = 0): Array<{ node: LineageNode; depth: number }> {
  return [{ node: n, depth }, ...n.children.flatMap((c) => flatten(c, depth + 1))];
}
