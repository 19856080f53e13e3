/**
 * Archive lag: how long the oldest WAL file has waited in a database's
 * outbox for the host to take it. A file waits from the earliest time Warren
 * knows of it: its mtime in the outbox listing, or the pass that first saw it
 * (the archive_command copies a file again when it retries after 60 s, which
 * renews the mtime). When the outbox cannot even be listed, the lag is the
 * time since the last successful collection. A successful collection takes
 * every file that was ready, so afterwards nothing known waits.
 *
 * Past `dbArchiveLagSeconds` a ready database is in an episode of lag: it
 * gets one `archive_lag_exceeded` database event (and webhook) when the
 * episode starts and one `archive_lag_recovered` when the lag is back under
 * the limit with collection working. Whether an episode is open is read
 * back from the database's events, so a restart of the control plane
 * neither repeats nor loses one.
 */
import type { FileList } from '@warren/protocol';
import type { DatabaseQueries, DatabaseRecord } from '../store/databases';

export type ArchiveLagEvent = 'database.archive_lag_exceeded' | 'database.archive_lag_recovered';

/** What the webhook carries (and the database event describes). */
export type ArchiveLagReport = {
  database_id: string;
  label: string;
  lag_seconds: number;
  oldest_wal: string | null;
  last_archived_wal: string | null;
  last_archived_at: string | null;
  error?: string;
};

interface LagState {
  /** First time each waiting file was seen (ms), by name. */
  since: Map<string, number>;
  /** Whether the last attempt to list the outbox worked. */
  listed: boolean;
  lastOkAt: number;
  lastListAt: number;
  failing: boolean;
  error?: string;
  /** Whether an episode is open; undefined until read from the events. */
  exceeded?: boolean;
}

export class ArchiveLag {
  private readonly states = new Map<string, LagState>();
  /** Set by the platform: where the events go as webhooks. */
  onEvent: (db: DatabaseRecord, type: ArchiveLagEvent, report: ArchiveLagReport) => void = () =>
    undefined;

  constructor(
    private readonly queries: DatabaseQueries,
    private readonly limitSeconds: number,
    /** How often the outbox is listed at most (ms); between listings ages are computed. */
    private readonly listEveryMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  private state(id: string): LagState {
    let s = this.states.get(id);
    if (!s) {
      s = { since: new Map(), listed: true, lastOkAt: this.now(), lastListAt: 0, failing: false };
      this.states.set(id, s);
    }
    return s;
  }

  /** Whether the outbox should be listed before this pass's collection. */
  listDue(id: string): boolean {
    return this.now() - this.state(id).lastListAt >= this.listEveryMs;
  }

  /** The outbox as listed (null: the listing failed). */
  listed(id: string, listing: FileList | null): void {
    const s = this.state(id);
    const now = this.now();
    s.lastListAt = now;
    s.listed = listing !== null;
    if (!listing) return;
    const ready = listing.items.filter((e) => e.type === 'file' && !e.name.endsWith('.tmp'));
    const names = new Set(ready.map((e) => e.name));
    for (const name of s.since.keys()) if (!names.has(name)) s.since.delete(name);
    for (const e of ready) {
      const mtime = Date.parse(e.mtime);
      const seen = s.since.get(e.name) ?? now;
      s.since.set(e.name, Number.isFinite(mtime) ? Math.min(seen, mtime) : seen);
    }
  }

  /** The result of this pass's collection. */
  collected(id: string, error: Error | null): void {
    const s = this.state(id);
    s.failing = error !== null;
    s.error = error?.message;
    if (error) return;
    s.lastOkAt = this.now();
    s.since.clear();
  }

  private oldest(s: LagState): { name: string; since: number } | null {
    let best: { name: string; since: number } | null = null;
    for (const [name, since] of s.since)
      if (!best || since < best.since || (since === best.since && name < best.name))
        best = { name, since };
    return best;
  }

  /** Seconds the oldest WAL file has waited (0 when none does); null for a database not measured. */
  seconds(id: string): number | null {
    const s = this.states.get(id);
    if (!s) return null;
    if (!s.failing) return 0;
    const now = this.now();
    const oldest = this.oldest(s);
    const waited = oldest ? now - oldest.since : 0;
    const lag = s.listed ? waited : Math.max(waited, now - s.lastOkAt);
    return Math.max(0, Math.floor(lag / 1000));
  }

  /** Opens or closes an episode for a ready database after its pass. */
  async check(db: DatabaseRecord): Promise<void> {
    const s = this.state(db.id);
    s.exceeded ??= await this.openEpisode(db.id);
    const lag = this.seconds(db.id) ?? 0;
    const over = lag > this.limitSeconds;
    // While collecting fails an episode stays open: after a restart the wait of
    // a file Postgres copied again is known only from its fresh mtime.
    if (over === s.exceeded || (s.exceeded && s.failing)) return;
    const report: ArchiveLagReport = {
      database_id: db.id,
      label: db.label,
      lag_seconds: lag,
      oldest_wal: this.oldest(s)?.name ?? null,
      last_archived_wal: db.last_archived_wal,
      last_archived_at: db.last_archived_at,
      ...(s.error !== undefined && over && { error: s.error }),
    };
    s.exceeded = over;
    if (over) {
      const what = report.oldest_wal ? `${report.oldest_wal} has waited` : 'nothing was collected';
      await this.queries.event(
        db.id,
        'archive_lag_exceeded',
        `${what} for ${lag} s, past the limit of ${this.limitSeconds} s${s.error ? `: ${s.error}` : ''}`,
      );
      this.onEvent(db, 'database.archive_lag_exceeded', report);
    } else {
      await this.queries.event(
        db.id,
        'archive_lag_recovered',
        `archive lag back to ${lag} s (limit ${this.limitSeconds} s)`,
      );
      this.onEvent(db, 'database.archive_lag_recovered', report);
    }
  }

  /** A database not ready (starting, recovering, asleep) is not measured; its episode stays open. */
  notReady(id: string): void {
    const s = this.states.get(id);
    if (!s) return;
    s.since.clear();
    s.failing = false;
    s.error = undefined;
    s.listed = true;
    s.lastOkAt = this.now();
  }

  /** Forgets databases no longer on this host's list. */
  keepOnly(ids: Set<string>): void {
    for (const id of this.states.keys()) if (!ids.has(id)) this.states.delete(id);
  }

  private async openEpisode(id: string): Promise<boolean> {
    const last = (await this.queries.events(id))
      .filter((e) => e.kind === 'archive_lag_exceeded' || e.kind === 'archive_lag_recovered')
      .at(-1);
    return last?.kind === 'archive_lag_exceeded';
  }
}
