/** Managed PostgreSQL databases, with their connection strings to copy. */
import { Link } from 'react-router';
import { useQuery } from '@tanstack/react-query';
import { api } from '../lib/api';
import { POLL_MS } from '../lib/hooks';
import type { Database, Page } from '../lib/types';
import { Copy } from '../components/Copy';
import { ErrorBox, Loading } from '../components/ErrorBox';

export function DatabasesPage() {
  const list = useQuery({
    queryKey: ['databases'],
    queryFn: () => api<Page<Database>>('/v1/databases'),
    refetchInterval: POLL_MS,
  });
  return (
    <section aria-labelledby="db-title">
      <h1 id="db-title">Databases</h1>
      <ErrorBox error={list.error} />
      {list.isPending ? (
        <Loading what="databases" />
      ) : (
        <div className="cards">
          {(list.data?.items ?? []).map((d) => (
            <article key={d.id} className="card" aria-label={`Database ${d.label || d.id}`}>
              <h2>
                {d.label || d.id} <span className={`state state-${d.state}`}>{d.state}</span>
              </h2>
              <dl className="details">
                <dt>Id</dt>
                <dd>{d.id}</dd>
                <dt>Version</dt>
                <dd>PostgreSQL {d.version}</dd>
                <dt>Size</dt>
                <dd>
                  {d.cpu} vCPU, {d.memory_mb} MiB, {d.disk_mb} MiB disk
                </dd>
                <dt>Direct</dt>
                <dd>
                  <Copy value={d.connection_url} label={`connection string of ${d.id}`} />
                </dd>
                <dt>Pooled</dt>
                <dd>
                  <Copy value={d.pooled_url} label={`pooled connection string of ${d.id}`} />
                </dd>
                <dt>Runs in</dt>
                <dd>
                  <Link to={`/sandboxes/${d.sandbox_id}`}>{d.sandbox_id}</Link>
                </dd>
                {d.parent_id && (
                  <>
                    <dt>Parent</dt>
                    <dd>{d.parent_id}</dd>
                  </>
                )}
              </dl>
            </article>
          ))}
          {list.data?.items.length === 0 && <p className="muted">No databases.</p>}
        </div>
      )}
    </section>
  );
}
