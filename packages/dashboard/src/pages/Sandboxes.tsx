/** The sandboxes list: live (polled), filtered by state and labels, bulk delete, create form. */
import { useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, query } from '../lib/api';
import { age, formatLabels, parseLabels, ttlCountdown } from '../lib/format';
import { POLL_MS, useNow } from '../lib/hooks';
import type { Page, Sandbox } from '../lib/types';
import { ErrorBox, Loading } from '../components/ErrorBox';
import { CreateSandbox } from './CreateSandbox';

const STATES = ['', 'creating', 'running', 'paused', 'hibernated', 'stopping', 'stopped'];

export function sandboxListPath(state: string, labels: Record<string, string>): string {
  const params: Record<string, string> = { limit: '500' };
  if (state) params.state = state;
  for (const [k, v] of Object.entries(labels)) params[`metadata.${k}`] = v;
  return `/v1/sandboxes${query(params)}`;
}

export function SandboxesPage() {
  const [params, setParams] = useSearchParams();
  const state = params.get('state') ?? '';
  const labelText = params.get('labels') ?? '';
  const parsed = parseLabels(labelText);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [showCreate, setShowCreate] = useState(false);
  const now = useNow();
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: ['sandboxes', state, parsed.labels],
    queryFn: () => api<Page<Sandbox>>(sandboxListPath(state, parsed.labels)),
    refetchInterval: POLL_MS,
    enabled: !parsed.error,
  });
  const del = useMutation({
    mutationFn: async (ids: string[]) => {
      const results = await Promise.allSettled(
        ids.map((id) => api(`/v1/sandboxes/${id}`, { method: 'DELETE' })),
      );
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
    onSettled: () => {
      setSelected(new Set());
      void qc.invalidateQueries({ queryKey: ['sandboxes'] });
    },
  });
  const items = useMemo(() => list.data?.items ?? [], [list.data]);
  const allSelected = items.length > 0 && items.every((s) => selected.has(s.id));
  const setFilter = (k: string, v: string) => {
    const next = new URLSearchParams(params);
    if (v) next.set(k, v);
    else next.delete(k);
    setParams(next, { replace: true });
  };
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  return (
    <section aria-labelledby="sandboxes-title">
      <div className="title-row">
        <h1 id="sandboxes-title">Sandboxes</h1>
        <button type="button" onClick={() => setShowCreate((v) => !v)} aria-expanded={showCreate}>
          {showCreate ? 'Close form' : 'New sandbox'}
        </button>
      </div>
      {showCreate && <CreateSandbox onDone={() => setShowCreate(false)} />}
      <div className="filters" role="search">
        <label>
          State
          <select value={state} onChange={(e) => setFilter('state', e.target.value)}>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s || 'active (not stopped)'}
              </option>
            ))}
          </select>
        </label>
        <label>
          Labels
          <input
            placeholder="team=red, env=dev"
            defaultValue={labelText}
            onKeyDown={(e) => e.key === 'Enter' && setFilter('labels', e.currentTarget.value)}
            onBlur={(e) => setFilter('labels', e.currentTarget.value)}
          />
        </label>
        <button
          type="button"
          className="danger"
          disabled={selected.size === 0 || del.isPending}
          onClick={() => {
            if (confirm(`Delete ${selected.size} sandbox(es)?`)) del.mutate([...selected]);
          }}
        >
          Delete selected ({selected.size})
        </button>
      </div>
      {parsed.error && <ErrorBox error={new Error(parsed.error)} title="Label filter" />}
      <ErrorBox error={del.error} title="Delete" />
      <ErrorBox error={list.error} />
      {list.isPending && !parsed.error ? (
        <Loading what="sandboxes" />
      ) : (
        <div className="table-wrap">
          <table className="sandboxes">
            <thead>
              <tr>
                <th>
                  <input
                    type="checkbox"
                    aria-label="Select all sandboxes"
                    checked={allSelected}
                    onChange={() =>
                      setSelected(allSelected ? new Set() : new Set(items.map((s) => s.id)))
                    }
                  />
                </th>
                <th>Sandbox</th>
                <th>State</th>
                <th>Template</th>
                <th>Labels</th>
                <th>Age</th>
                <th>TTL</th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => {
                const ttl = ttlCountdown(s, now);
                return (
                  <tr key={s.id} data-id={s.id}>
                    <td>
                      <input
                        type="checkbox"
                        aria-label={`Select ${s.id}`}
                        checked={selected.has(s.id)}
                        onChange={() => toggle(s.id)}
                      />
                    </td>
                    <td>
                      <Link to={`/sandboxes/${s.id}`}>{s.id}</Link>
                    </td>
                    <td>
                      <span className={`state state-${s.state}`}>{s.state}</span>
                    </td>
                    <td>{s.template}</td>
                    <td className="labels">{formatLabels(s.metadata)}</td>
                    <td>{age(s.created_at, now)}</td>
                    <td className={`ttl ttl-${ttl.tone}`}>{ttl.text}</td>
                  </tr>
                );
              })}
              {items.length === 0 && (
                <tr>
                  <td colSpan={7} className="muted">
                    No sandboxes{state || labelText ? ' match these filters' : ' yet'}.
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
