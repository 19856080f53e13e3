/**
 * Placement: which host a new sandbox goes to. Filter the hosts that can
 * take it (active, reached, its template ready there or fetchable, memory left, and the
 * one host that holds what it must start from, if any), then score: the
 * fewest live sandboxes first (spread), then the most free memory. With
 * many hosts only a few, drawn at random, are scored ("best of a few"), so
 * control planes placing at once do not all pick the same host.
 */
import { WarrenError, type HostCapacity } from '@warren/protocol';

export interface PlacementCandidate {
  id: string;
  state: string;
  connected: boolean;
  capacity: HostCapacity | null;
  templates: string[];
  /** Live sandboxes (every state but stopped) on the host. */
  sandboxes: number;
}

export interface PlacementRequest {
  template: string;
  memoryMb: number;
  /** The host that must take it (a volume, a capture or an admin's hint). */
  pinned?: { hostId: string; why: string };
  /** Hosts that refused this sandbox just now (their capacity report was behind). */
  refusedBy?: string[];
  /** Hosts without the template fit too: they fetch it from the shared store first. */
  fetchable?: boolean;
}

export interface Placement {
  hostId: string;
  reason: string;
}

/** How many hosts are scored when there are more. */
export const SAMPLE = 3;

function freeMb(c: HostCapacity): number {
  const used = Math.max(c.memory_used_mb ?? 0, 0);
  return c.memory_budget_mb - used;
}

function whyNot(h: PlacementCandidate, req: PlacementRequest): string | null {
  if (h.state !== 'active') return h.state;
  if (!h.connected) return 'not connected';
  if (req.refusedBy?.includes(h.id)) return 'refused it just now';
  if (!h.templates.includes(req.template) && !req.fetchable) return `no template ${req.template}`;
  const c = h.capacity;
  if (!c) return 'no capacity reported';
  const overcommit = c.memory_overcommit ?? 1;
  if (c.memory_reserved_mb + req.memoryMb > c.memory_budget_mb * overcommit) return 'memory full';
  if (freeMb(c) < (c.memory_start_mb ?? 0)) return 'memory full';
  return null;
}

/** What the reason adds when the host lacks the template and fetches it. */
function fetches(h: PlacementCandidate, req: PlacementRequest): string {
  return h.templates.includes(req.template)
    ? ''
    : `; fetches template ${req.template} from the shared store`;
}

export function place(
  hosts: PlacementCandidate[],
  req: PlacementRequest,
  random: () => number = Math.random,
): Placement {
  if (req.pinned) {
    const h = hosts.find((x) => x.id === req.pinned!.hostId);
    if (!h) throw new WarrenError('HOST_NOT_FOUND', `host ${req.pinned.hostId} does not exist`);
    const no = whyNot(h, req);
    if (no)
      throw new WarrenError(
        'INSUFFICIENT_CAPACITY',
        `host ${h.id} (${req.pinned.why}) cannot take the sandbox: ${no}`,
        { host_id: h.id, reason: no },
      );
    return { hostId: h.id, reason: `placed on ${h.id}: ${req.pinned.why}${fetches(h, req)}` };
  }
  const refused: string[] = [];
  const fit = hosts.filter((h) => {
    const no = whyNot(h, req);
    if (no) refused.push(`${h.id}: ${no}`);
    return !no;
  });
  if (fit.length === 0)
    throw new WarrenError(
      'INSUFFICIENT_CAPACITY',
      `no host can take the sandbox (${refused.join('; ') || 'no hosts'})`,
      { hosts: refused },
    );
  let scored = fit;
  if (fit.length > SAMPLE) {
    const pool = [...fit];
    scored = [];
    while (scored.length < SAMPLE)
      scored.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  }
  // Fewest sandboxes, then the template already there, then the most free memory.
  const has = (h: PlacementCandidate) => (fetches(h, req) ? 0 : 1);
  const best = scored.reduce((a, b) =>
    b.sandboxes < a.sandboxes ||
    (b.sandboxes === a.sandboxes &&
      (has(b) > has(a) || (has(b) === has(a) && freeMb(b.capacity!) > freeMb(a.capacity!))))
      ? b
      : a,
  );
  return {
    hostId: best.id,
    reason:
      `placed on ${best.id}: ${fit.length} of ${hosts.length} hosts fit` +
      (scored.length < fit.length ? `, ${scored.length} scored` : '') +
      `; fewest sandboxes (${best.sandboxes}), ${freeMb(best.capacity!)} MiB free` +
      fetches(best, req),
  };
}
