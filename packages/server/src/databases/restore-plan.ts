/**
 * What a restore needs from the archive: the newest base backup at or before
 * the target, and the WAL files from that backup's start on. Pure: the
 * service lists the archive and the backups, this picks.
 */
import { WarrenError, type ArchivedObject } from '@warren/protocol';

export interface BackupInfo {
  key: string;
  start_lsn: string;
  at: string;
}

const SEGMENT_BYTES = 16 * 1024 * 1024;
const SEGMENTS_PER_ID = 0x100000000 / SEGMENT_BYTES;

/** The log and segment part (16 hex digits) of the WAL file that holds `lsn` ("X/Y"). */
export function segmentOf(lsn: string): string {
  const [hi, lo] = lsn.split('/').map((h) => BigInt(`0x${h}`));
  if (hi === undefined || lo === undefined) throw new Error(`bad LSN ${lsn}`);
  const segno = ((hi << 32n) | lo) / BigInt(SEGMENT_BYTES);
  const hex = (n: bigint) => n.toString(16).toUpperCase().padStart(8, '0');
  return hex(segno / BigInt(SEGMENTS_PER_ID)) + hex(segno % BigInt(SEGMENTS_PER_ID));
}

const WAL = /^[0-9A-F]{24}(\.partial)?$/;
const HISTORY = /^[0-9A-F]{8}\.history$/;

export interface RestorePlan {
  /** null: start from the template's seed cluster and replay every archived WAL file. */
  backup: BackupInfo | null;
  wal: ArchivedObject[];
}

const name = (o: ArchivedObject) => o.key.slice(o.key.lastIndexOf('/') + 1);

/**
 * Picks what to restore. `now` bounds the target; a target before the first
 * base backup, or in the future, is INVALID_RESTORE_TARGET. `fromSeed`: the
 * database began as the template's seed cluster (created empty), so before
 * its first base backup a restore to latest starts from the seed and replays
 * its whole archive; the archive holds every WAL file since its first start.
 */
export function planRestore(
  backups: BackupInfo[],
  archived: ArchivedObject[],
  target: string | undefined,
  now: Date,
  fromSeed = false,
): RestorePlan {
  if (backups.length === 0 && fromSeed && target === undefined)
    return {
      backup: null,
      wal: archived.filter((o) => HISTORY.test(name(o)) || WAL.test(name(o))),
    };
  if (backups.length === 0)
    throw new WarrenError(
      'INVALID_RESTORE_TARGET',
      'the database has no base backup yet: nothing to restore from',
    );
  let candidates = backups;
  if (target !== undefined) {
    const t = Date.parse(target);
    if (Number.isNaN(t))
      throw new WarrenError('INVALID_RESTORE_TARGET', `target_time ${target} is not a time`);
    if (t > now.getTime())
      throw new WarrenError('INVALID_RESTORE_TARGET', `target_time ${target} is in the future`);
    candidates = backups.filter((b) => Date.parse(b.at) <= t);
    if (candidates.length === 0)
      throw new WarrenError(
        'INVALID_RESTORE_TARGET',
        `target_time ${target} is before the first base backup (${backups[0]!.at})`,
        { earliest: backups[0]!.at },
      );
  }
  const backup = [...candidates].sort((a, b) => Date.parse(a.at) - Date.parse(b.at)).at(-1)!;
  const from = segmentOf(backup.start_lsn);
  const wal = archived.filter((o) => {
    const n = name(o);
    if (HISTORY.test(n)) return true;
    return WAL.test(n) && n.slice(8, 24) >= from;
  });
  return { backup, wal };
}
