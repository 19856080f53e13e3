/** How a database's archive is described in the dashboard; pure, unit-tested. */
import { formatDuration } from './format';

export interface ArchiveView {
  text: string;
  /** `ok`, `lagging` (WAL waits longer than a minute), `none` (nothing archived yet), `idle` (not running). */
  tone: 'ok' | 'lagging' | 'none' | 'idle';
}

export function archiveStatus(
  db: {
    state: string;
    archive_lag_seconds: number | null;
    archive: { last_archived_wal: string | null; last_archived_at: string | null };
  },
  now: number,
): ArchiveView {
  const last = db.archive.last_archived_at
    ? `last WAL ${formatDuration((now - Date.parse(db.archive.last_archived_at)) / 1000)} ago`
    : 'no WAL archived yet';
  if (db.state !== 'ready') return { text: `${last} (${db.state})`, tone: 'idle' };
  if (db.archive_lag_seconds === null)
    return {
      text: `${last}, lag not measured yet`,
      tone: db.archive.last_archived_at ? 'ok' : 'none',
    };
  if (db.archive_lag_seconds > 60)
    return {
      text: `${last}; WAL waiting ${formatDuration(db.archive_lag_seconds)}`,
      tone: 'lagging',
    };
  return {
    text: `${last}; ${db.archive_lag_seconds === 0 ? 'nothing waiting' : `lag ${db.archive_lag_seconds} s`}`,
    tone: db.archive.last_archived_at ? 'ok' : 'none',
  };
}

/** A `datetime-local` input's value (local time, no zone) as an ISO 8601 instant; '' for none. */
export function localToIso(value: string): string {
  if (!value.trim()) return '';
  const t = new Date(value);
  return Number.isNaN(t.getTime()) ? '' : t.toISOString();
}
