/** A sandbox's sampled usage: CPU, memory, disk and network over a range, and the totals. */
import { lazy, Suspense, useMemo, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, query } from '../lib/api';
import { formatBytes } from '../lib/format';
import { RANGES, formatFigure, rangeOf, sampleSeries, type RangeKey } from '../lib/usage';
import type { SandboxMetrics } from '../lib/types';
import { ErrorBox, Loading } from './ErrorBox';

const TimeChart = lazy(() => import('./TimeChart'));

export function Metrics({ sandboxId }: { sandboxId: string }) {
  const [range, setRange] = useState<RangeKey>('1h');
  const m = useQuery({
    queryKey: ['metrics', sandboxId, range],
    queryFn: () => {
      const r = rangeOf(range, Date.now());
      return api<SandboxMetrics>(
        `/v1/sandboxes/${sandboxId}/metrics${query({ since: r.from, until: r.to })}`,
      );
    },
    refetchInterval: 5000,
  });
  const s = useMemo(() => sampleSeries(m.data?.samples ?? []), [m.data]);
  const cpu = useMemo(
    () => [
      {
        label: 'CPU',
        color: '#2563eb',
        values: s.cpuPercent,
        format: (v: number) => `${v.toFixed(0)} %`,
      },
    ],
    [s],
  );
  const mem = useMemo(
    () => [
      {
        label: 'Memory',
        color: '#7c3aed',
        values: s.memoryMiB,
        format: (v: number) => `${v.toFixed(0)} MiB`,
      },
      {
        label: 'Disk',
        color: '#059669',
        values: s.diskMiB,
        format: (v: number) => `${v.toFixed(0)} MiB`,
      },
    ],
    [s],
  );
  const net = useMemo(
    () => [
      {
        label: 'Network',
        color: '#d97706',
        values: s.netKiBps,
        format: (v: number) => `${v.toFixed(1)} KiB/s`,
      },
    ],
    [s],
  );
  if (m.isPending) return <Loading what="metrics" />;
  const t = m.data?.totals;
  return (
    <div>
      <ErrorBox error={m.error} />
      <div className="filters">
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
        <span className="muted small">
          Sampled every {((m.data?.sample_interval_ms ?? 0) / 1000).toFixed(0)} s while the sandbox
          is live.
        </span>
      </div>
      {t && (
        <dl className="details" aria-label="Usage totals">
          <dt>CPU</dt>
          <dd>{formatFigure(t.cpu_seconds, 'CPU s')}</dd>
          <dt>Memory</dt>
          <dd>{formatFigure(t.memory_gb_seconds, 'GiB·s')}</dd>
          <dt>Live</dt>
          <dd>{formatFigure(t.sandbox_seconds, 's')}</dd>
          <dt>Disk peak</dt>
          <dd>{formatBytes(t.disk_bytes_peak)}</dd>
          <dt>Network</dt>
          <dd>
            {formatBytes(t.net_rx_bytes)} in, {formatBytes(t.net_tx_bytes)} out
          </dd>
        </dl>
      )}
      {s.times.length === 0 ? (
        <p className="muted">No samples in this range.</p>
      ) : (
        <Suspense fallback={<Loading what="the charts" />}>
          <div className="charts">
            <TimeChart title="CPU (% of one CPU)" times={s.times} series={cpu} />
            <TimeChart title="Memory and disk" times={s.times} series={mem} />
            <TimeChart title="Network (egress, both ways)" times={s.times} series={net} />
          </div>
        </Suspense>
      )}
    </div>
  );
}
