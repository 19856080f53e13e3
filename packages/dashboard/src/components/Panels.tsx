/** The smaller views of one sandbox: processes, events, egress and network policy, previews. */
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, query } from '../lib/api';
import { formatBytes } from '../lib/format';
import { POLL_MS } from '../lib/hooks';
import type { EgressEvent, NetworkView, ProcessInfo, Sandbox, SandboxEvent } from '../lib/types';
import { ErrorBox, Loading } from './ErrorBox';

export function Processes({ sandboxId }: { sandboxId: string }) {
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: ['processes', sandboxId],
    queryFn: () => api<{ items: ProcessInfo[] }>(`/v1/sandboxes/${sandboxId}/processes`),
    refetchInterval: POLL_MS,
  });
  const signal = useMutation({
    mutationFn: (o: { pid: number; signal: string }) =>
      api(`/v1/sandboxes/${sandboxId}/processes/${o.pid}/signal`, {
        method: 'POST',
        json: { signal: o.signal },
      }),
    onSettled: () => void qc.invalidateQueries({ queryKey: ['processes', sandboxId] }),
  });
  if (list.isPending) return <Loading what="processes" />;
  return (
    <div className="table-wrap">
      <ErrorBox error={list.error} />
      <ErrorBox error={signal.error} title="Signal" />
      <p className="muted small">Background processes started through the API (POST /processes).</p>
      <table>
        <thead>
          <tr>
            <th>PID</th>
            <th>Command</th>
            <th>State</th>
            <th>Exit</th>
            <th>Started</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.items ?? []).map((p) => (
            <tr key={p.pid}>
              <td>{p.pid}</td>
              <td>
                <code>{[p.cmd, ...p.args].join(' ')}</code>
              </td>
              <td>{p.state}</td>
              <td>{p.exit_code ?? p.signal ?? ''}</td>
              <td>{new Date(p.started_at).toLocaleTimeString()}</td>
              <td>
                {p.state === 'running' && (
                  <>
                    <button
                      type="button"
                      className="secondary"
                      onClick={() => signal.mutate({ pid: p.pid, signal: 'SIGTERM' })}
                    >
                      Terminate
                    </button>
                    <button
                      type="button"
                      className="danger"
                      onClick={() => signal.mutate({ pid: p.pid, signal: 'SIGKILL' })}
                    >
                      Kill
                    </button>
                  </>
                )}
              </td>
            </tr>
          ))}
          {list.data?.items.length === 0 && (
            <tr>
              <td colSpan={6} className="muted">
                No background processes.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}

export function Events({ sandboxId }: { sandboxId: string }) {
  const list = useQuery({
    queryKey: ['events', sandboxId],
    queryFn: () => api<{ items: SandboxEvent[] }>(`/v1/sandboxes/${sandboxId}/events`),
    refetchInterval: POLL_MS,
  });
  if (list.isPending) return <Loading what="events" />;
  return (
    <div>
      <ErrorBox error={list.error} />
      <ol className="timeline" aria-label="Events timeline">
        {(list.data?.items ?? []).map((e, i) => (
          <li key={i}>
            <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>{' '}
            <span className="state">{e.from_state ?? '∅'}</span> →{' '}
            <span className={`state state-${e.to_state}`}>{e.to_state}</span>{' '}
            <span className="muted">{e.cause}</span>
          </li>
        ))}
      </ol>
    </div>
  );
}

const rules = (t: string) => t.split(/\s+/).filter(Boolean);

export function Egress({ sandbox }: { sandbox: Sandbox }) {
  const id = sandbox.id;
  const qc = useQueryClient();
  const [decision, setDecision] = useState('');
  const policy = useQuery({
    queryKey: ['network', id],
    queryFn: () => api<NetworkView>(`/v1/sandboxes/${id}/network`),
  });
  const log = useQuery({
    queryKey: ['egress', id, decision],
    queryFn: () =>
      api<{ items: EgressEvent[] }>(`/v1/sandboxes/${id}/egress${query({ decision, limit: 200 })}`),
    refetchInterval: POLL_MS,
  });
  const [draft, setDraft] = useState<{ mode: string; allow: string; deny: string } | null>(null);
  const save = useMutation({
    mutationFn: (d: { mode: string; allow: string; deny: string }) =>
      api(`/v1/sandboxes/${id}/network`, {
        method: 'PUT',
        json: { mode: d.mode, allow: rules(d.allow), deny: rules(d.deny) },
      }),
    onSuccess: () => {
      setDraft(null);
      void qc.invalidateQueries({ queryKey: ['network', id] });
    },
  });
  const current = policy.data;
  const form =
    draft ??
    (current
      ? { mode: current.mode, allow: current.allow.join('\n'), deny: current.deny.join('\n') }
      : null);
  return (
    <div>
      <h2>Network policy</h2>
      <ErrorBox error={policy.error} />
      {form && (
        <form
          className="card grid"
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate(form);
          }}
        >
          <label>
            Mode
            <select value={form.mode} onChange={(e) => setDraft({ ...form, mode: e.target.value })}>
              <option value="none">none</option>
              <option value="restricted">restricted</option>
              <option value="open">open</option>
            </select>
          </label>
          <label>
            Allow
            <textarea
              rows={3}
              value={form.allow}
              onChange={(e) => setDraft({ ...form, allow: e.target.value })}
            />
          </label>
          <label>
            Deny
            <textarea
              rows={3}
              value={form.deny}
              onChange={(e) => setDraft({ ...form, deny: e.target.value })}
            />
          </label>
          <div>
            <button type="submit" disabled={!draft || save.isPending}>
              Save policy
            </button>
            {current && current.secrets.length > 0 && (
              <p className="muted small">
                Secrets injected for:{' '}
                {current.secrets.map((s) => `${s.host} (${s.header})`).join(', ')}
              </p>
            )}
          </div>
          <ErrorBox error={save.error} title="Save" />
        </form>
      )}
      <h2>Egress log</h2>
      <label>
        Decision{' '}
        <select value={decision} onChange={(e) => setDecision(e.target.value)}>
          <option value="">all</option>
          <option value="allowed">allowed</option>
          <option value="denied">denied</option>
        </select>
      </label>
      <ErrorBox error={log.error} />
      <div className="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Time</th>
              <th>Destination</th>
              <th>Decision</th>
              <th>Reason</th>
              <th>Out / in</th>
            </tr>
          </thead>
          <tbody>
            {(log.data?.items ?? []).map((e) => (
              <tr key={e.id}>
                <td>{new Date(e.at).toLocaleTimeString()}</td>
                <td>
                  {e.protocol} {e.host}:{e.port}
                </td>
                <td className={`decision-${e.decision}`}>{e.decision}</td>
                <td>{e.reason}</td>
                <td>
                  {formatBytes(e.bytes_out)} / {formatBytes(e.bytes_in)}
                </td>
              </tr>
            ))}
            {log.data?.items.length === 0 && (
              <tr>
                <td colSpan={5} className="muted">
                  No connections yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </div>
  );
}

export function Previews({ sandbox }: { sandbox: Sandbox }) {
  const [port, setPort] = useState('3000');
  const url = sandbox.preview_url.replace('{port}', port || '{port}');
  return (
    <div>
      <p>
        Every port a server in the sandbox listens on (on its loopback) is reachable at its preview
        URL.
      </p>
      <label>
        Port{' '}
        <input
          type="number"
          min="1"
          max="65535"
          value={port}
          onChange={(e) => setPort(e.target.value)}
        />
      </label>
      <p>
        <a href={url} target="_blank" rel="noreferrer">
          {url}
        </a>
      </p>
      {sandbox.preview_auth && (
        <p className="muted">This sandbox's previews need its preview token.</p>
      )}
    </div>
  );
}
