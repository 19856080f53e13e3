/**
 * A time-series chart drawn by uPlot (a canvas chart of about 20 KiB gzip),
 * loaded only when a chart is shown. The series share one time axis; the
 * values are summarised in a table next to it for screen readers and copying.
 */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  color: string;
  values: (number | null)[];
  format: (v: number) => string;
}

export default function TimeChart({
  title,
  times,
  series,
  height = 180,
}: {
  title: string;
  /** Seconds since the epoch. */
  times: number[];
  series: Series[];
  height?: number;
}) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join('|');

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      title,
      width: Math.max(280, el.clientWidth),
      height,
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          value: (_u: uPlot, v: number | null) => (v === null ? '-' : s.format(v)),
        })),
      ],
      axes: [{}, { values: (_u, ticks) => ticks.map((t) => series[0]!.format(t)), size: 70 }],
      scales: { y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    };
    const u = new uPlot(opts, [times, ...series.map((s) => s.values)], el);
    chart.current = u;
    const resize = new ResizeObserver(() =>
      u.setSize({ width: Math.max(280, el.clientWidth), height }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      chart.current = null;
    };
    // Rebuilt only when the set of series changes; new data goes through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, title, height]);

  useEffect(() => {
    chart.current?.setData([times, ...series.map((s) => s.values)]);
  }, [times, series]);

  return <div className="chart" ref={box} role="img" aria-label={`${title} chart`} />;
}
