/**
 * Templates: the list, a form that builds one from a recipe (a base and steps),
 * rebuild and delete, and the build log streamed as the API sends it.
 */
import { useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, call } from '../lib/api';
import { formatLogLine, parseSteps, readBuild, type BuildEvent } from '../lib/build';
import { formatBytes } from '../lib/format';
import type { Page, Template } from '../lib/types';
import { ErrorBox, Loading } from '../components/ErrorBox';

const EXAMPLE = `# one shell command per line; WORKDIR /path and ENV KEY=value too
mkdir -p /srv
echo 'print("hello")' > /srv/app.py
WORKDIR /srv`;

interface Build {
  title: string;
  lines: string[];
  result: BuildEvent | null;
}

export function TemplatesPage() {
  const qc = useQueryClient();
  const [build, setBuild] = useState<Build | null>(null);
  const [showForm, setShowForm] = useState(false);
  const list = useQuery({
    queryKey: ['templates'],
    queryFn: () => api<Page<Template>>('/v1/templates'),
    refetchInterval: build && !build.result ? 2000 : 10_000,
  });
  const logRef = useRef<HTMLPreElement>(null);

  // Runs a build call and shows its log line by line; errors before the build
  // started are ordinary API errors (shown by the mutation's ErrorBox).
  const run = useMutation({
    mutationFn: async (b: { title: string; path: string; json?: unknown }) => {
      const res = await call(b.path, { method: 'POST', json: b.json ?? {} });
      const current: Build = { title: b.title, lines: [], result: null };
      setBuild({ ...current });
      await readBuild(res, (e) => {
        if (e.type === 'log') current.lines.push(formatLogLine(e));
        else current.result = e;
        setBuild({ ...current, lines: [...current.lines] });
        requestAnimationFrame(() => {
          const el = logRef.current;
          if (el) el.scrollTop = el.scrollHeight;
        });
      });
      if (!current.result)
        setBuild({
          ...current,
          result: {
            type: 'error',
            code: 'CONNECTION_FAILED',
            message: 'the build log ended early',
          },
        });
    },
    onMutate: () => setBuild(null),
    onSettled: () => void qc.invalidateQueries({ queryKey: ['templates'] }),
  });
  const del = useMutation({
    mutationFn: (name: string) => api(`/v1/templates/${name}`, { method: 'DELETE' }),
    onSettled: () => void qc.invalidateQueries({ queryKey: ['templates'] }),
  });
  const templates = list.data?.items ?? [];
  return (
    <section aria-labelledby="tpl-title">
      <div className="title-row">
        <h1 id="tpl-title">Templates</h1>
        <button type="button" onClick={() => setShowForm((v) => !v)} aria-expanded={showForm}>
          {showForm ? 'Close the form' : 'Build a template'}
        </button>
      </div>
      {showForm && (
        <BuildForm
          bases={templates.filter((t) => t.state === 'ready').map((t) => t.name)}
          busy={run.isPending}
          onBuild={(name, json) =>
            run.mutate({ title: `Building ${name}`, path: '/v1/templates', json })
          }
        />
      )}
      <ErrorBox error={run.error} title="Build" />
      <ErrorBox error={del.error} title="Delete" />
      {build && (
        <div className="card" aria-label="Build">
          <h2>
            {build.title}{' '}
            {build.result ? (
              <span className={`state state-${build.result.type === 'done' ? 'ready' : 'failed'}`}>
                {build.result.type === 'done' ? 'built' : 'failed'}
              </span>
            ) : (
              <span className="state state-building">building</span>
            )}
          </h2>
          <pre className="build-log" role="log" aria-label="Build log" ref={logRef}>
            {build.lines.join('\n')}
          </pre>
          {build.result?.type === 'error' && (
            <div className="error" role="alert">
              <code className="error-code">{build.result.code}</code>{' '}
              {build.result.step !== undefined && `step ${build.result.step}: `}
              {build.result.message}
            </div>
          )}
          {build.result?.type === 'done' && (
            <p className="notice" role="status">
              {formatLogLine(build.result)}
            </p>
          )}
        </div>
      )}
      <ErrorBox error={list.error} />
      {list.isPending ? (
        <Loading what="templates" />
      ) : (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>State</th>
                <th>Defaults</th>
                <th>Limits</th>
                <th>Snapshot</th>
                <th>Notes</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {templates.map((t) => (
                <tr key={t.name}>
                  <td>{t.name}</td>
                  <td>
                    <span className={`state state-${t.state}`}>{t.state}</span>
                  </td>
                  <td>
                    {t.default_cpu} vCPU, {t.default_memory_mb} MiB, {t.default_disk_mb} MiB disk
                  </td>
                  <td>
                    {t.max_cpu} vCPU, {t.max_memory_mb} MiB, {t.max_disk_mb} MiB disk
                  </td>
                  <td>{t.snapshot_bytes ? formatBytes(t.snapshot_bytes) : '-'}</td>
                  <td className="small">
                    {t.error ?? t.description ?? (t.base ? `recipe on ${t.base}` : '')}
                    {t.state === 'not_built' && t.build && (
                      <>
                        {' '}
                        Build: <code>{t.build.cli}</code>
                      </>
                    )}
                  </td>
                  <td className="row-actions">
                    <button
                      type="button"
                      className="secondary"
                      disabled={run.isPending || t.state === 'building'}
                      aria-label={`${t.state === 'not_built' ? 'Build' : 'Rebuild'} ${t.name}`}
                      onClick={() =>
                        run.mutate({
                          title: `${t.state === 'not_built' ? 'Building' : 'Rebuilding'} ${t.name}`,
                          path: `/v1/templates/${t.name}/rebuild`,
                        })
                      }
                    >
                      {t.state === 'not_built' ? 'Build' : 'Rebuild'}
                    </button>
                    {t.source !== 'builtin' && (
                      <button
                        type="button"
                        className="danger"
                        aria-label={`Delete ${t.name}`}
                        onClick={() => confirm(`Delete template ${t.name}?`) && del.mutate(t.name)}
                      >
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function BuildForm({
  bases,
  busy,
  onBuild,
}: {
  bases: string[];
  busy: boolean;
  onBuild: (name: string, json: unknown) => void;
}) {
  const [name, setName] = useState('');
  const [base, setBase] = useState('base');
  const [steps, setSteps] = useState(EXAMPLE);
  const [start, setStart] = useState('');
  const [memory, setMemory] = useState('');
  const parsed = parseSteps(steps);
  return (
    <form
      className="card form"
      aria-label="Build a template"
      onSubmit={(e) => {
        e.preventDefault();
        if (parsed.error) return;
        const startCmd = start.trim() ? ['/bin/sh', '-c', start.trim()] : undefined;
        onBuild(name, {
          name,
          base,
          steps: parsed.steps,
          ...(startCmd && { start: startCmd }),
          ...(memory && { default_memory_mb: Number(memory) }),
        });
      }}
    >
      <div className="grid">
        <label>
          Name
          <input
            value={name}
            onChange={(e) => setName(e.target.value)}
            required
            pattern="[a-z0-9][a-z0-9._\-]{0,62}"
            title="lower-case letters, digits, '.', '_' and '-'"
          />
        </label>
        <label>
          Base
          <select value={base} onChange={(e) => setBase(e.target.value)}>
            {(bases.includes(base) ? bases : [base, ...bases]).map((b) => (
              <option key={b}>{b}</option>
            ))}
          </select>
        </label>
        <label>
          Default memory (MiB)
          <input
            type="number"
            min="64"
            placeholder="the base's"
            value={memory}
            onChange={(e) => setMemory(e.target.value)}
          />
        </label>
        <label>
          Start command (optional)
          <input
            value={start}
            placeholder="python3 -m http.server 8000"
            onChange={(e) => setStart(e.target.value)}
          />
        </label>
      </div>
      <label>
        Steps
        <textarea
          rows={6}
          value={steps}
          onChange={(e) => setSteps(e.target.value)}
          spellCheck={false}
        />
      </label>
      {parsed.error && steps.trim() && <p className="muted small">{parsed.error}</p>}
      <p className="muted small">
        Steps run in a sandbox of the base without network; the build log below shows their output.
        Files and images are uploaded with the CLI (<code>warren template build</code>).
      </p>
      <button type="submit" disabled={busy || !!parsed.error}>
        Build
      </button>
    </form>
  );
}
