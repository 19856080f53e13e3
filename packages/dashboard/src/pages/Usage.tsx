/** Host capacity and usage totals over a range, grouped by organisation, template or a label. */
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, query } from '../lib/api';
import { formatBytes, formatDuration } from '../lib/format';
import { POLL_MS } from '../lib/hooks';
import { RANGES, formatFigure, groupBy, rangeOf, shares, type RangeKey } from '../lib/usage';
import type { Health, UsageReport } from '../lib/types';
import { ErrorBox, Loading } from '../components/ErrorBox';

export function UsagePage() {
  const [range, setRange] = useState<RangeKey>('24h');
  const [kind, setKind] = useState('organisation');
  const [labelKey, setLabelKey] = useState('');
  const by = groupBy(kind, labelKey);
  const health = useQuery({
    queryKey: ['health'],
    queryFn: () => api<Health>('/v1/health'),
    refetchInterval: POLL_MS,
  });
  const usage = useQuery({
    queryKey: ['usage', range, by],
    queryFn: () => {
      const r = rangeOf(range, Date.now());
      return api<UsageReport>(`/v1/usage${query({ from: r.from, to: r.to, group_by: by })}`);
    },
    enabled: by !== null,
    refetchInterval: 10_000,
  });
  const groups = usage.data?.groups ?? [];
  const bars = shares(groups.map((g) => g.cpu_seconds));
  const memBars = shares(groups.map((g) => g.memory_gb_seconds));
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <h2>Hosts</h2>
      <ErrorBox error={health.error} />
      {health.isPending ? (
        <Loading what="host capacity" />
      ) : (
        <div className="cards">
          {(health.data?.hosts ?? []).map((h) => {
            const pct =
              h.memory_budget_mb > 0
                ? Math.min(100, (h.memory_reserved_mb / h.memory_budget_mb) * 100)
                : 0;
            return (
              <article key={h.id} className="card" aria-label={`Host ${h.id}`}>
                <h3>{h.id}</h3>
                <label>
                  Memory reserved: {h.memory_reserved_mb} of {h.memory_budget_mb} MiB
                  <meter
                    min={0}
                    max={h.memory_budget_mb}
                    low={h.memory_budget_mb * 0.7}
                    high={h.memory_budget_mb * 0.9}
                    value={h.memory_reserved_mb}
                  >
                    {pct.toFixed(0)} %
                  </meter>
                </label>
                <dl className="details">
                  <dt>Sandboxes</dt>
                  <dd>{h.sandboxes}</dd>
                  <dt>Runtime</dt>
                  <dd>
                    {health.data!.runtime.driver} {health.data!.runtime.version}
                  </dd>
                  <dt>Up</dt>
                  <dd>{formatDuration(health.data!.uptime_seconds)}</dd>
                </dl>
              </article>
            );
          })}
        </div>
      )}
      <h2>Usage</h2>
      <form className="filters" aria-label="Usage range" onSubmit={(e) => e.preventDefault()}>
        <label>
          Range
          <select value={range} onChange={(e) => setRange(e.target.value as RangeKey)}>
            {Object.keys(RANGES).map((k) => (
              <option key={k} value={k}>
                last {k}
              </option>
            ))}
          </select>
        </label>
        <label>
          Group by
          <select value={kind} onChange={(e) => setKind(e.target.value)}>
            <option value="organisation">organisation</option>
            <option value="template">template</option>
            <option value="label">label</option>
          </select>
        </label>
        {kind === 'label' && (
          <label>
            Label key
            <input
              value={labelKey}
              placeholder="team"
              onChange={(e) => setLabelKey(e.target.value)}
            />
          </label>
        )}
      </form>
      <ErrorBox error={usage.error} />
      {by === null ? (
        <p className="muted">Name the label to group by.</p>
      ) : usage.isPending ? (
        <Loading what="usage" />
      ) : (
        <div className="table-wrap">
          <table aria-label="Usage by group">
            <thead>
              <tr>
                <th>{kind === 'label' ? labelKey : kind}</th>
                <th>Sandboxes</th>
                <th>CPU</th>
                <th>Memory</th>
                <th>Live</th>
                <th>Disk peak</th>
                <th>Network in / out</th>
              </tr>
            </thead>
            <tbody>
              {groups.map((g, i) => (
                <tr key={g.key ?? '\u0000'}>
                  <td>{g.key ?? <span className="muted">(no label)</span>}</td>
                  <td>{g.sandboxes}</td>
                  <td>
                    <span className="bar" style={{ width: `${bars[i]}%` }} aria-hidden />
                    {formatFigure(g.cpu_seconds, 'CPU s')}
                  </td>
                  <td>
                    <span
                      className="bar bar-memory"
                      style={{ width: `${memBars[i]}%` }}
                      aria-hidden
                    />
                    {formatFigure(g.memory_gb_seconds, 'GiB·s')}
                  </td>
                  <td>{formatDuration(g.sandbox_seconds)}</td>
                  <td>{formatBytes(g.disk_bytes_peak)}</td>
                  <td>
                    {formatBytes(g.net_rx_bytes)} / {formatBytes(g.net_tx_bytes)}
                  </td>
                </tr>
              ))}
              {groups.length === 0 && (
                <tr>
                  <td colSpan={7} className="muted">
                    No usage in this range.
                  </td>
                </tr>
              )}
            </tbody>
            {usage.data && groups.length > 0 && (
              <tfoot>
                <tr>
                  <th>Total</th>
                  <td>{groups.reduce((n, g) => n + g.sandboxes, 0)}</td>
                  <td>{formatFigure(usage.data.totals.cpu_seconds, 'CPU s')}</td>
                  <td>{formatFigure(usage.data.totals.memory_gb_seconds, 'GiB·s')}</td>
                  <td>{formatDuration(usage.data.totals.sandbox_seconds)}</td>
                  <td>{formatBytes(usage.data.totals.disk_bytes_peak)}</td>
                  <td>
                    {formatBytes(usage.data.totals.net_rx_bytes)} /{' '}
                    {formatBytes(usage.data.totals.net_tx_bytes)}
                  </td>
                </tr>
              </tfoot>
            )}
          </table>
        </div>
      )}
    </section>
  );
}
