/** REST schemas of usage: a sandbox's sampled time series, and totals over a range grouped. */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

const Time = (description: string) =>
  Type.Optional(Type.String({ format: 'date-time', description }));

export const SandboxMetricsQuery = Type.Object(
  {
    since: Time('First sample time (default: 1 hour before `until`).'),
    until: Time('Last sample time (default: now).'),
  },
  Strict,
);
export type SandboxMetricsQuery = Static<typeof SandboxMetricsQuery>;

/** What a sandbox (or a group of them) used over a range. */
export const UsageFigures = Type.Object({
  cpu_seconds: Type.Number({
    description: 'CPU time used, in seconds (1 = one CPU busy for 1 s).',
  }),
  memory_gb_seconds: Type.Number({
    description: 'Memory in use integrated over time, in GiB-seconds (1 GiB held for 1 s = 1).',
  }),
  sandbox_seconds: Type.Number({
    description: 'Time the sandboxes were live on a host (running or paused), in seconds.',
  }),
  disk_bytes_peak: Type.Integer({
    description: "Largest disk use seen in the range, summed over the group's sandboxes.",
  }),
  net_rx_bytes: Type.Integer({ description: 'Bytes into the sandboxes over their egress.' }),
  net_tx_bytes: Type.Integer({ description: 'Bytes out of the sandboxes over their egress.' }),
});
export type UsageFigures = Static<typeof UsageFigures>;

export const UsageSample = Type.Object({
  at: Type.String({ format: 'date-time' }),
  interval_seconds: Type.Number({ description: 'Time since the previous sample (or the start).' }),
  cpu_seconds: Type.Number({ description: 'CPU time used in the interval.' }),
  cpu_percent: Type.Number({
    description: 'cpu_seconds over the interval, in percent of one CPU.',
  }),
  memory_bytes: Type.Integer({ description: 'Memory in use at the sample.' }),
  memory_gb_seconds: Type.Number({ description: 'Memory integrated over the interval.' }),
  disk_bytes: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Disk in use at the sample; null when the host cannot measure it.',
  }),
  net_rx_bytes: Type.Integer({ description: 'Bytes into the sandbox in the interval.' }),
  net_tx_bytes: Type.Integer({ description: 'Bytes out of the sandbox in the interval.' }),
});
export type UsageSample = Static<typeof UsageSample>;

export const SandboxMetrics = Type.Object({
  sandbox_id: Type.String(),
  since: Type.String({ format: 'date-time' }),
  until: Type.String({ format: 'date-time' }),
  sample_interval_ms: Type.Integer(),
  samples: Type.Array(UsageSample, { description: 'Oldest first.' }),
  totals: UsageFigures,
});
export type SandboxMetrics = Static<typeof SandboxMetrics>;

export const UsageQuery = Type.Object(
  {
    from: Time('Start of the range (default: 24 hours before `to`).'),
    to: Time('End of the range (default: now).'),
    group_by: Type.String({
      default: 'organisation',
      pattern: '^(organisation|template|label:[^\\s]{1,63})$',
      description: '`organisation`, `template`, or `label:<key>` (the value of a metadata label).',
    }),
    org_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: "Only this organisation (the install's admin sees all of them by default).",
      }),
    ),
  },
  Strict,
);
export type UsageQuery = Static<typeof UsageQuery>;

export const UsageGroup = Type.Composite([
  Type.Object({
    key: Type.Union([Type.String(), Type.Null()], {
      description: 'The organisation id, template name or label value; null: no such label.',
    }),
    sandboxes: Type.Integer({ description: 'Sandboxes with usage in the range.' }),
  }),
  UsageFigures,
]);
export type UsageGroup = Static<typeof UsageGroup>;

export const UsageReport = Type.Object({
  from: Type.String({ format: 'date-time' }),
  to: Type.String({ format: 'date-time' }),
  group_by: Type.String(),
  groups: Type.Array(UsageGroup, { description: 'Largest cpu_seconds first.' }),
  totals: UsageFigures,
});
export type UsageReport = Static<typeof UsageReport>;
