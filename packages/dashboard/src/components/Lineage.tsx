/** The lineage of forks and snapshots of a sandbox's line, drawn as a tree. */
import { Link } from 'react-router';
import { useQuery } from '@tanstack/react-query';
import { api, ApiError } from '../lib/api';
import { buildLineage, type LineageNode } from '../lib/lineage';
import { POLL_MS } from '../lib/hooks';
import type { Page, Sandbox, Snapshot } from '../lib/types';
import { ErrorBox, Loading } from './ErrorBox';

async function lineData(): Promise<{ sandboxes: Sandbox[]; snapshots: Snapshot[] }> {
  const [active, stopped, snaps] = await Promise.all([
    api<Page<Sandbox>>('/v1/sandboxes?limit=500'),
    api<Page<Sandbox>>('/v1/sandboxes?state=stopped&limit=500'),
    // A key without the snapshots scope still sees the forks.
    api<Page<Snapshot>>('/v1/snapshots').catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 403) return { items: [] };
      throw err;
    }),
  ]);
  return { sandboxes: [...active.items, ...stopped.items], snapshots: snaps.items };
}

export function Lineage({ sandbox }: { sandbox: Sandbox }) {
  const data = useQuery({ queryKey: ['lineage'], queryFn: lineData, refetchInterval: POLL_MS });
  if (data.isPending) return <Loading what="the lineage" />;
  if (data.error) return <ErrorBox error={data.error} />;
  const tree = buildLineage(sandbox, data.data.sandboxes, data.data.snapshots);
  return (
    <div className="lineage" aria-label="Lineage">
      <ul className="tree" role="tree">
        <Node node={tree} focus={sandbox.id} />
      </ul>
    </div>
  );
}

function Node({ node, focus }: { node: LineageNode; focus: string }) {
  const label =
    node.kind === 'snapshot' ? (
      <span className="node snapshot">snapshot {node.id}</span>
    ) : node.kind === 'missing' ? (
      <span className="node missing">{node.id} (record purged)</span>
    ) : (
      <span className={`node sandbox ${node.id === focus ? 'focus' : ''}`}>
        <Link
          to={`/sandboxes/${node.id}/lineage`}
          aria-current={node.id === focus ? 'page' : undefined}
        >
          {node.id}
        </Link>{' '}
        <span className={`state state-${node.sandbox?.state}`}>{node.sandbox?.state}</span>
        {node.sandbox?.fork_kind && (
          <span className="muted small"> {node.sandbox.fork_kind} fork</span>
        )}
      </span>
    );
  return (
    <li role="treeitem" aria-expanded={node.children.length ? true : undefined} data-node={node.id}>
      {label}
      {node.children.length > 0 && (
        <ul role="group">
          {node.children.map((c) => (
            <Node key={`${c.kind}:${c.id}`} node={c} focus={focus} />
          ))}
        </ul>
      )}
    </li>
  );
}
