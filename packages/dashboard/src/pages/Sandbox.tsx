/** One sandbox: details, lifecycle buttons, and tabs for terminal, files, processes and more. */
import { lazy, Suspense } from 'react';
import { NavLink, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../lib/api';
import { age, formatLabels, ttlCountdown } from '../lib/format';
import { POLL_MS, useNow } from '../lib/hooks';
import type { Sandbox, Snapshot } from '../lib/types';
import { ErrorBox, Loading } from '../components/ErrorBox';
import { Files } from '../components/Files';
import { Lineage } from '../components/Lineage';
import { Metrics } from '../components/Metrics';
import { Egress, Events, Previews, Processes } from '../components/Panels';

// xterm.js is most of the code: loaded only when a terminal is shown.
const Terminal = lazy(() =>
  import('../components/Terminal').then((m) => ({ default: m.Terminal })),
);

const TABS = [
  ['terminal', 'Terminal'],
  ['files', 'Files'],
  ['processes', 'Processes'],
  ['events', 'Events'],
  ['network', 'Network'],
  ['previews', 'Previews'],
  ['lineage', 'Lineage'],
  ['metrics', 'Metrics'],
] as const;

type Action = 'pause' | 'resume' | 'hibernate' | 'wake' | 'snapshot' | 'fork' | 'delete';
const ALLOWED: Record<Action, string[]> = {
  pause: ['running'],
  resume: ['paused'],
  hibernate: ['running', 'paused'],
  wake: ['hibernated'],
  snapshot: ['running', 'paused', 'hibernated'],
  fork: ['running', 'paused', 'hibernated'],
  delete: ['creating', 'running', 'paused', 'hibernated'],
};

export function SandboxPage() {
  const { id = '', tab = 'terminal' } = useParams();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const now = useNow();
  const sbx = useQuery({
    queryKey: ['sandbox', id],
    queryFn: () => api<Sandbox>(`/v1/sandboxes/${id}`),
    refetchInterval: POLL_MS,
  });
  const action = useMutation({
    mutationFn: async (a: Action): Promise<{ a: Action; child?: Sandbox; snap?: Snapshot }> => {
      if (a === 'delete') {
        await api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
        return { a };
      }
      if (a === 'fork')
        return {
          a,
          child: await api<Sandbox>(`/v1/sandboxes/${id}/fork`, { method: 'POST', json: {} }),
        };
      if (a === 'snapshot')
        return {
          a,
          snap: await api<Snapshot>(`/v1/sandboxes/${id}/snapshots`, { method: 'POST', json: {} }),
        };
      await api(`/v1/sandboxes/${id}/${a}`, { method: 'POST', json: {} });
      return { a };
    },
    onSuccess: ({ a }) => {
      void qc.invalidateQueries({ queryKey: ['sandbox', id] });
      void qc.invalidateQueries({ queryKey: ['sandboxes'] });
      void qc.invalidateQueries({ queryKey: ['lineage'] });
      void qc.invalidateQueries({ queryKey: ['snapshots'] });
      if (a === 'fork') void navigate(`/sandboxes/${id}/lineage`);
    },
  });
  if (sbx.isPending) return <Loading what="the sandbox" />;
  if (sbx.error && !sbx.data) return <ErrorBox error={sbx.error} />;
  const s = sbx.data!;
  const ttl = ttlCountdown(s, now);
  const last = action.data;
  return (
    <section aria-labelledby="sandbox-title">
      <div className="title-row">
        <h1 id="sandbox-title">{s.id}</h1>
        <span className={`state state-${s.state}`}>{s.state}</span>
      </div>
      <div className="actions" role="toolbar" aria-label="Sandbox actions">
        {(Object.keys(ALLOWED) as Action[]).map((a) => (
          <button
            key={a}
            type="button"
            className={a === 'delete' ? 'danger' : 'secondary'}
            disabled={action.isPending || !ALLOWED[a].includes(s.state)}
            onClick={() => {
              if (a !== 'delete' || confirm(`Delete ${s.id}?`)) action.mutate(a);
            }}
          >
            {a[0]!.toUpperCase() + a.slice(1)}
          </button>
        ))}
      </div>
      {action.isPending && (
        <p className="muted" aria-live="polite">
          Working…
        </p>
      )}
      <ErrorBox error={action.error} title="Action" />
      {last?.child && (
        <p className="notice" role="status">
          Forked: <NavLinkTo id={last.child.id} />
        </p>
      )}
      {last?.snap && (
        <p className="notice" role="status">
          Snapshot {last.snap.id} taken.
        </p>
      )}
      <ErrorBox error={sbx.error} title="Refresh" />
      <dl className="details">
        <dt>Template</dt>
        <dd>{s.template}</dd>
        <dt>Size</dt>
        <dd>
          {s.cpu} vCPU, {s.memory_mb} MiB memory, {s.disk_mb} MiB disk
        </dd>
        <dt>Labels</dt>
        <dd>{formatLabels(s.metadata) || '-'}</dd>
        <dt>Created</dt>
        <dd title={s.created_at}>{age(s.created_at, now)}</dd>
        <dt>TTL</dt>
        <dd className={`ttl ttl-${ttl.tone}`}>{ttl.text}</dd>
        <dt>Parent</dt>
        <dd>{s.parent_id ? <NavLinkTo id={s.parent_id} /> : '-'}</dd>
        {s.stop_reason && (
          <>
            <dt>Stopped</dt>
            <dd>{s.stop_reason}</dd>
          </>
        )}
      </dl>
      <nav className="tabs" aria-label="Sandbox views">
        {TABS.map(([t, label]) => (
          <NavLink
            key={t}
            to={`/sandboxes/${id}/${t}`}
            className={t === tab ? 'active' : ''}
            replace
          >
            {label}
          </NavLink>
        ))}
      </nav>
      <div className="tab-body">
        {tab === 'terminal' && (
          <Suspense fallback={<Loading what="the terminal" />}>
            <Terminal
              sandbox={s}
              hold={
                action.isPending &&
                (action.variables === 'pause' || action.variables === 'hibernate')
              }
            />
          </Suspense>
        )}
        {tab === 'files' && <Files sandboxId={id} />}
        {tab === 'processes' && <Processes sandboxId={id} />}
        {tab === 'events' && <Events sandboxId={id} />}
        {tab === 'network' && <Egress sandbox={s} />}
        {tab === 'previews' && <Previews sandbox={s} />}
        {tab === 'lineage' && <Lineage sandbox={s} />}
        {tab === 'metrics' && <Metrics sandboxId={id} />}
      </div>
    </section>
  );
}

function NavLinkTo({ id }: { id: string }) {
  return <NavLink to={`/sandboxes/${id}`}>{id}</NavLink>;
}
