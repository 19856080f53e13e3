/** Managed PostgreSQL databases: the list with connection strings to copy, and a create form. */
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../lib/api';
import { archiveStatus } from '../lib/databases';
import { POLL_MS } from '../lib/hooks';
import type { Database, Page } from '../lib/types';
import { Copy } from '../components/Copy';
import { ErrorBox, Loading } from '../components/ErrorBox';

export function DatabasesPage() {
  const [showForm, setShowForm] = useState(false);
  const list = useQuery({
    queryKey: ['databases'],
    queryFn: () => api<Page<Database>>('/v1/databases'),
    refetchInterval: POLL_MS,
  });
  const items = list.data?.items ?? [];
  return (
    <section aria-labelledby="db-title">
      <div className="title-row">
        <h1 id="db-title">Databases</h1>
        <button type="button" onClick={() => setShowForm((v) => !v)} aria-expanded={showForm}>
          {showForm ? 'Close the form' : 'New database'}
        </button>
      </div>
      {showForm && <CreateDatabase />}
      <ErrorBox error={list.error} />
      {list.isPending ? (
        <Loading what="databases" />
      ) : (
        <div className="cards">
          {items.map((d) => {
            const archive = archiveStatus(d, Date.now());
            return (
              <article key={d.id} className="card" aria-label={`Database ${d.label || d.id}`}>
                <h2>
                  <Link to={`/databases/${d.id}`}>{d.label || d.id}</Link>{' '}
                  <span className={`state state-${d.state}`}>{d.state}</span>
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
                  <dt>Archive</dt>
                  <dd className={`archive-${archive.tone}`}>{archive.text}</dd>
                  {d.parent_id && (
                    <>
                      <dt>Made from</dt>
                      <dd>
                        <Link to={`/databases/${d.parent_id}`}>{d.parent_id}</Link>
                      </dd>
                    </>
                  )}
                </dl>
              </article>
            );
          })}
          {items.length === 0 && <p className="muted">No databases.</p>}
        </div>
      )}
    </section>
  );
}

function CreateDatabase() {
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [form, setForm] = useState({
    label: '',
    cpu: '',
    memory_mb: '',
    disk_mb: '',
    scale_to_zero_seconds: '',
  });
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement>) =>
    setForm({ ...form, [k]: e.target.value });
  const create = useMutation({
    mutationFn: () => {
      const body: Record<string, unknown> = { label: form.label };
      for (const k of ['cpu', 'memory_mb', 'disk_mb', 'scale_to_zero_seconds'] as const)
        if (form[k].trim() !== '') body[k] = Number(form[k]);
      return api<Database>('/v1/databases', { method: 'POST', json: body });
    },
    onSuccess: (db) => {
      void qc.invalidateQueries({ queryKey: ['databases'] });
      void navigate(`/databases/${db.id}`);
    },
  });
  return (
    <form
      className="card form"
      aria-label="Create a database"
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <div className="grid">
        <label>
          Label
          <input value={form.label} onChange={set('label')} required maxLength={63} />
        </label>
        <label>
          vCPUs
          <input
            type="number"
            step="0.25"
            min="0.25"
            placeholder="1"
            value={form.cpu}
            onChange={set('cpu')}
          />
        </label>
        <label>
          Memory (MiB)
          <input
            type="number"
            min="256"
            placeholder="1024"
            value={form.memory_mb}
            onChange={set('memory_mb')}
          />
        </label>
        <label>
          Disk (MiB)
          <input
            type="number"
            min="128"
            placeholder="1024"
            value={form.disk_mb}
            onChange={set('disk_mb')}
          />
        </label>
        <label>
          Scale to zero after (seconds)
          <input
            type="number"
            min="0"
            placeholder="0: never"
            value={form.scale_to_zero_seconds}
            onChange={set('scale_to_zero_seconds')}
          />
        </label>
      </div>
      <ErrorBox error={create.error} title="Create" />
      <button type="submit" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create database'}
      </button>
    </form>
  );
}
