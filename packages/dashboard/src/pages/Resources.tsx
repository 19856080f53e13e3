/** Snapshots and volumes: lists with the actions their APIs offer. */
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../lib/api';
import { formatBytes } from '../lib/format';
import { POLL_MS } from '../lib/hooks';
import type { Page, Sandbox, Snapshot, Volume } from '../lib/types';
import { ErrorBox, Loading } from '../components/ErrorBox';

export function SnapshotsPage() {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const list = useQuery({
    queryKey: ['snapshots'],
    queryFn: () => api<Page<Snapshot>>('/v1/snapshots'),
    refetchInterval: POLL_MS,
  });
  const restore = useMutation({
    mutationFn: (id: string) =>
      api<Sandbox>('/v1/sandboxes', { method: 'POST', json: { from_snapshot: id } }),
    onSuccess: (s) => void navigate(`/sandboxes/${s.id}`),
  });
  const del = useMutation({
    mutationFn: (id: string) => api(`/v1/snapshots/${id}`, { method: 'DELETE' }),
    onSettled: () => void qc.invalidateQueries({ queryKey: ['snapshots'] }),
  });
  return (
    <section aria-labelledby="snap-title">
      <h1 id="snap-title">Snapshots</h1>
      <ErrorBox error={list.error} />
      <ErrorBox error={restore.error} title="Restore" />
      <ErrorBox error={del.error} title="Delete" />
      {list.isPending ? (
        <Loading what="snapshots" />
      ) : (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Snapshot</th>
                <th>From</th>
                <th>Template</th>
                <th>Size</th>
                <th>Created</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {(list.data?.items ?? []).map((s) => (
                <tr key={s.id}>
                  <td>{s.id}</td>
                  <td>
                    <Link to={`/sandboxes/${s.sandbox_id}/lineage`}>{s.sandbox_id}</Link>
                  </td>
                  <td>{s.template}</td>
                  <td>{formatBytes(s.size_bytes)}</td>
                  <td>{new Date(s.created_at).toLocaleString()}</td>
                  <td className="row-actions">
                    <button
                      type="button"
                      className="secondary"
                      disabled={restore.isPending}
                      onClick={() => restore.mutate(s.id)}
                    >
                      Start a sandbox from it
                    </button>
                    <button
                      type="button"
                      className="danger"
                      onClick={() => confirm(`Delete ${s.id}?`) && del.mutate(s.id)}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
              {list.data?.items.length === 0 && (
                <tr>
                  <td colSpan={6} className="muted">
                    No snapshots.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function VolumesPage() {
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const [size, setSize] = useState('1024');
  const list = useQuery({
    queryKey: ['volumes'],
    queryFn: () => api<Page<Volume>>('/v1/volumes'),
    refetchInterval: POLL_MS,
  });
  const create = useMutation({
    mutationFn: () => api('/v1/volumes', { method: 'POST', json: { name, size_mb: Number(size) } }),
    onSuccess: () => setName(''),
    onSettled: () => void qc.invalidateQueries({ queryKey: ['volumes'] }),
  });
  const del = useMutation({
    mutationFn: (n: string) => api(`/v1/volumes/${n}`, { method: 'DELETE' }),
    onSettled: () => void qc.invalidateQueries({ queryKey: ['volumes'] }),
  });
  return (
    <section aria-labelledby="vol-title">
      <h1 id="vol-title">Volumes</h1>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <label>
          Name
          <input
            value={name}
            onChange={(e) => setName(e.target.value)}
            required
            pattern="[a-z0-9][a-z0-9_\-]{0,62}"
          />
        </label>
        <label>
          Size (MiB)
          <input type="number" min="8" value={size} onChange={(e) => setSize(e.target.value)} />
        </label>
        <button type="submit" disabled={create.isPending}>
          Create volume
        </button>
      </form>
      <ErrorBox error={create.error} title="Create" />
      <ErrorBox error={del.error} title="Delete" />
      <ErrorBox error={list.error} />
      {list.isPending ? (
        <Loading what="volumes" />
      ) : (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Size</th>
                <th>Used</th>
                <th>Attached to</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {(list.data?.items ?? []).map((v) => (
                <tr key={v.id}>
                  <td>{v.name}</td>
                  <td>{v.size_mb} MiB</td>
                  <td>{formatBytes(v.used_bytes)}</td>
                  <td>
                    {v.attachments.map((a) => (
                      <Link key={a.sandbox_id} to={`/sandboxes/${a.sandbox_id}`}>
                        {a.sandbox_id} ({a.mount_path}
                        {a.read_only ? ', read-only' : ''}){' '}
                      </Link>
                    ))}
                  </td>
                  <td>
                    <button
                      type="button"
                      className="danger"
                      onClick={() =>
                        confirm(`Delete volume ${v.name} and its data?`) && del.mutate(v.name)
                      }
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
              {list.data?.items.length === 0 && (
                <tr>
                  <td colSpan={5} className="muted">
                    No volumes.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
