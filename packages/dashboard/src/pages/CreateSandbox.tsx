/** The create form: template, sizes, TTL, labels and the network policy. */
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../lib/api';
import { parseLabels } from '../lib/format';
import type { Page, Sandbox, Template } from '../lib/types';
import { ErrorBox } from '../components/ErrorBox';

const lines = (t: string) =>
  t
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);

export function CreateSandbox({ onDone }: { onDone: () => void }) {
  const navigate = useNavigate();
  const qc = useQueryClient();
  const templates = useQuery({
    queryKey: ['templates'],
    queryFn: () => api<Page<Template>>('/v1/templates'),
  });
  const [form, setForm] = useState({
    template: 'base',
    cpu: '',
    memory_mb: '',
    disk_mb: '',
    ttl_seconds: '3600',
    labels: '',
    mode: 'none',
    allow: '',
    deny: '',
  });
  const set =
    (k: keyof typeof form) =>
    (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>) =>
      setForm({ ...form, [k]: e.target.value });
  const create = useMutation({
    mutationFn: async () => {
      const labels = parseLabels(form.labels);
      if (labels.error) throw new Error(labels.error);
      const body: Record<string, unknown> = { template: form.template, metadata: labels.labels };
      for (const k of ['cpu', 'memory_mb', 'disk_mb', 'ttl_seconds'] as const)
        if (form[k].trim() !== '') body[k] = Number(form[k]);
      body.network = {
        mode: form.mode,
        ...(form.mode === 'restricted' ? { allow: lines(form.allow) } : {}),
        ...(form.mode === 'open' ? { deny: lines(form.deny) } : {}),
      };
      return api<Sandbox>('/v1/sandboxes', { method: 'POST', json: body });
    },
    onSuccess: (sbx) => {
      void qc.invalidateQueries({ queryKey: ['sandboxes'] });
      onDone();
      void navigate(`/sandboxes/${sbx.id}`);
    },
  });
  const ready = (templates.data?.items ?? []).filter((t) => t.state === 'ready');
  const chosen = ready.find((t) => t.name === form.template);
  return (
    <form
      className="card create"
      aria-label="Create a sandbox"
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <h2>New sandbox</h2>
      <ErrorBox error={templates.error} title="Templates" />
      <div className="grid">
        <label>
          Template
          <select value={form.template} onChange={set('template')}>
            {ready.length === 0 && <option value="base">base</option>}
            {ready.map((t) => (
              <option key={t.name} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          vCPUs
          <input
            type="number"
            step="0.25"
            min="0.25"
            max={chosen?.max_cpu}
            placeholder={String(chosen?.default_cpu ?? '')}
            value={form.cpu}
            onChange={set('cpu')}
          />
        </label>
        <label>
          Memory (MiB)
          <input
            type="number"
            min="64"
            max={chosen?.max_memory_mb}
            placeholder={String(chosen?.default_memory_mb ?? '')}
            value={form.memory_mb}
            onChange={set('memory_mb')}
          />
        </label>
        <label>
          Disk (MiB)
          <input
            type="number"
            min="64"
            max={chosen?.max_disk_mb}
            placeholder={String(chosen?.default_disk_mb ?? '')}
            value={form.disk_mb}
            onChange={set('disk_mb')}
          />
        </label>
        <label>
          TTL (seconds)
          <input
            type="number"
            min="1"
            max="604800"
            value={form.ttl_seconds}
            onChange={set('ttl_seconds')}
          />
        </label>
        <label>
          Labels
          <input placeholder="team=red, env=dev" value={form.labels} onChange={set('labels')} />
        </label>
        <label>
          Network
          <select value={form.mode} onChange={set('mode')}>
            <option value="none">none: no egress</option>
            <option value="restricted">restricted: only what is allowed</option>
            <option value="open">open: all but what is denied</option>
          </select>
        </label>
        {form.mode === 'restricted' && (
          <label>
            Allow (one rule a line)
            <textarea
              rows={3}
              placeholder="pypi.org:443&#10;preset:npm"
              value={form.allow}
              onChange={set('allow')}
            />
          </label>
        )}
        {form.mode === 'open' && (
          <label>
            Deny (one rule a line)
            <textarea rows={3} value={form.deny} onChange={set('deny')} />
          </label>
        )}
      </div>
      <button type="submit" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create sandbox'}
      </button>
      <ErrorBox error={create.error} title="Create" />
    </form>
  );
}
