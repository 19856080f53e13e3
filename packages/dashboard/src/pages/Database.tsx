/**
 * One database: connection strings, archive status, its branches and restores,
 * password rotation, branch, point-in-time restore, delete, events and the
 * server log.
 */
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, query } from '../lib/api';
import { archiveStatus, localToIso } from '../lib/databases';
import { POLL_MS } from '../lib/hooks';
import type { Database, DatabaseEvent, Page } from '../lib/types';
import { Copy } from '../components/Copy';
import { ErrorBox, Loading } from '../components/ErrorBox';

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '-');

export function DatabasePage() {
  const { id = '' } = useParams();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [branchLabel, setBranchLabel] = useState('');
  const [restoreAt, setRestoreAt] = useState('');
  const [restoreLabel, setRestoreLabel] = useState('');
  const [made, setMade] = useState<{ what: string; db: Database } | null>(null);
  const db = useQuery({
    queryKey: ['database', id],
    queryFn: () => api<Database>(`/v1/databases/${id}`),
    refetchInterval: POLL_MS,
  });
  const all = useQuery({
    queryKey: ['databases'],
    queryFn: () => api<Page<Database>>('/v1/databases'),
    refetchInterval: POLL_MS,
  });
  const events = useQuery({
    queryKey: ['database-events', id],
    queryFn: () => api<{ items: DatabaseEvent[] }>(`/v1/databases/${id}/events`),
    refetchInterval: POLL_MS,
  });
  const logs = useQuery({
    queryKey: ['database-logs', id],
    queryFn: () => api<{ lines: string[] }>(`/v1/databases/${id}/logs${query({ lines: 100 })}`),
    enabled: db.data?.state === 'ready',
    refetchInterval: 10_000,
  });
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: ['database', id] });
    void qc.invalidateQueries({ queryKey: ['databases'] });
    void qc.invalidateQueries({ queryKey: ['database-events', id] });
  };
  const rotate = useMutation({
    mutationFn: () => api<Database>(`/v1/databases/${id}/password`, { method: 'POST', json: {} }),
    onSuccess: (d) => {
      qc.setQueryData(['database', id], d);
      setMade(null);
      refresh();
    },
  });
  const branch = useMutation({
    mutationFn: () =>
      api<Database>(`/v1/databases/${id}/branches`, {
        method: 'POST',
        json: branchLabel.trim() ? { label: branchLabel.trim() } : {},
      }),
    onSuccess: (d) => {
      setMade({ what: 'Branch', db: d });
      setBranchLabel('');
      refresh();
    },
  });
  const restore = useMutation({
    mutationFn: () => {
      const target = localToIso(restoreAt);
      return api<Database>(`/v1/databases/${id}/restore`, {
        method: 'POST',
        json: {
          ...(target && { target_time: target }),
          ...(restoreLabel.trim() && { label: restoreLabel.trim() }),
        },
      });
    },
    onSuccess: (d) => {
      setMade({ what: 'Restore', db: d });
      refresh();
    },
  });
  const del = useMutation({
    mutationFn: () => api(`/v1/databases/${id}`, { method: 'DELETE' }),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['databases'] });
      void navigate('/databases');
    },
  });
  if (db.isPending) return <Loading what="the database" />;
  if (db.error && !db.data) return <ErrorBox error={db.error} />;
  const d = db.data!;
  const archive = archiveStatus(d, Date.now());
  const children = (all.data?.items ?? []).filter((c) => c.parent_id === d.id);
  const busy = rotate.isPending || branch.isPending || restore.isPending || del.isPending;
  return (
    <section aria-labelledby="database-title">
      <div className="title-row">
        <h1 id="database-title">{d.label || d.id}</h1>
        <span className={`state state-${d.state}`}>{d.state}</span>
      </div>
      <ErrorBox error={db.error} title="Refresh" />
      <dl className="details">
        <dt>Id</dt>
        <dd>{d.id}</dd>
        <dt>Version</dt>
        <dd>PostgreSQL {d.version}</dd>
        <dt>Size</dt>
        <dd>
          {d.cpu} vCPU, {d.memory_mb} MiB memory, {d.disk_mb} MiB data volume
        </dd>
        <dt>Scale to zero</dt>
        <dd>{d.scale_to_zero_seconds ? `after ${d.scale_to_zero_seconds} s idle` : 'never'}</dd>
        <dt>Direct</dt>
        <dd>
          <Copy value={d.connection_url} label={`connection string of ${d.id}`} />
        </dd>
        <dt>Pooled</dt>
        <dd>
          <Copy value={d.pooled_url} label={`pooled connection string of ${d.id}`} />
        </dd>
        <dt>CA</dt>
        <dd>
          <a href="/v1/databases/ca.pem" download="warren-ca.pem">
            ca.pem
          </a>{' '}
          <span className="muted small">for sslmode=verify-full</span>
        </dd>
        <dt>Runs in</dt>
        <dd>
          <Link to={`/sandboxes/${d.sandbox_id}`}>{d.sandbox_id}</Link>
        </dd>
        {d.parent_id && (
          <>
            <dt>Made from</dt>
            <dd>
              <Link to={`/databases/${d.parent_id}`}>{d.parent_id}</Link>
              {d.restored_to && ` as of ${when(d.restored_to)}`}
            </dd>
          </>
        )}
        <dt>Created</dt>
        <dd>{when(d.created_at)}</dd>
      </dl>

      <h2>Archive</h2>
      <dl className="details" aria-label="Archive status">
        <dt>Status</dt>
        <dd className={`archive-${archive.tone}`}>{archive.text}</dd>
        <dt>Last WAL</dt>
        <dd>
          {d.archive.last_archived_wal ?? '-'}{' '}
          <span className="muted">{when(d.archive.last_archived_at)}</span>
        </dd>
        <dt>Base backup</dt>
        <dd>
          {when(d.archive.last_base_backup_at)}
          {d.archive.last_base_backup_lsn && (
            <span className="muted"> at LSN {d.archive.last_base_backup_lsn}</span>
          )}
        </dd>
        <dt>Epoch</dt>
        <dd>{d.archive.epoch}</dd>
      </dl>

      <h2>Actions</h2>
      <div className="actions">
        <button
          type="button"
          className="secondary"
          disabled={busy}
          onClick={() =>
            confirm('Set a new password? The old one stops working at once.') && rotate.mutate()
          }
        >
          Rotate password
        </button>
        <button
          type="button"
          className="danger"
          disabled={busy}
          onClick={() =>
            confirm(
              `Delete ${d.label || d.id}, its data volume and its archive? This cannot be undone.`,
            ) && del.mutate()
          }
        >
          Delete database
        </button>
      </div>
      {rotate.isSuccess && (
        <p className="notice" role="status">
          New password set; the connection strings above have it.
        </p>
      )}
      <ErrorBox error={rotate.error} title="Rotate password" />
      <ErrorBox error={del.error} title="Delete" />
      <form
        className="filters"
        aria-label="Branch the database"
        onSubmit={(e) => {
          e.preventDefault();
          branch.mutate();
        }}
      >
        <label>
          Branch label
          <input
            value={branchLabel}
            placeholder={`${d.label} branch`}
            onChange={(e) => setBranchLabel(e.target.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          {branch.isPending ? 'Branching…' : 'Branch'}
        </button>
        <span className="muted small">
          A new database with the data as of now; this one keeps running.
        </span>
      </form>
      <ErrorBox error={branch.error} title="Branch" />
      <form
        className="filters"
        aria-label="Restore the database"
        onSubmit={(e) => {
          e.preventDefault();
          restore.mutate();
        }}
      >
        <label>
          Restore to (local time)
          <input
            type="datetime-local"
            step="1"
            value={restoreAt}
            onChange={(e) => setRestoreAt(e.target.value)}
          />
        </label>
        <label>
          Restore label
          <input
            value={restoreLabel}
            placeholder={`${d.label} restore`}
            onChange={(e) => setRestoreLabel(e.target.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          {restore.isPending ? 'Restoring…' : 'Restore'}
        </button>
        <span className="muted small">
          A new database from the archive, at that moment (empty: the last archived WAL).
        </span>
      </form>
      <ErrorBox error={restore.error} title="Restore" />
      {made && (
        <p className="notice" role="status">
          {made.what} ready:{' '}
          <Link to={`/databases/${made.db.id}`}>{made.db.label || made.db.id}</Link>
        </p>
      )}

      <h2>Branches and restores</h2>
      {children.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <ul aria-label="Branches and restores">
          {children.map((c) => (
            <li key={c.id}>
              <Link to={`/databases/${c.id}`}>{c.label || c.id}</Link>{' '}
              <span className={`state state-${c.state}`}>{c.state}</span>{' '}
              <span className="muted">
                {c.restored_to
                  ? `point-in-time restore to ${when(c.restored_to)}`
                  : 'a copy of the data as of its creation'}
                , made {when(c.created_at)}
              </span>
            </li>
          ))}
        </ul>
      )}

      <h2>Events</h2>
      <ErrorBox error={events.error} />
      <ol className="timeline" aria-label="Database events">
        {(events.data?.items ?? []).map((e, i) => (
          <li key={i}>
            <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>{' '}
            <span className="state">{e.kind}</span> <span className="muted">{e.message}</span>
          </li>
        ))}
      </ol>

      <h2>Server log</h2>
      <ErrorBox error={logs.error} />
      {d.state !== 'ready' ? (
        <p className="muted">The log is read from the running server.</p>
      ) : (
        <pre className="build-log" aria-label="Server log">
          {(logs.data?.lines ?? []).join('\n')}
        </pre>
      )}
    </section>
  );
}
