/**
 * Restoring a database from the archive into a new volume and sandbox: the
 * newest base backup at or before the target (unpacked onto the new volume by
 * the host), then every archived WAL file after it (copied there by the host
 * too), replayed by Postgres up to the target (or to the end). A database
 * created empty that has no base backup yet starts from the template's seed
 * cluster instead, and replays its whole archive.
 */
import type { HostApi } from '@warren/protocol';
import type { DatabaseQueries, DatabaseRecord } from '../store/databases';
import { RESTORE_BASE } from './postgres';
import { RESTORE_WAL, SEEDED_DATA } from './postgres/layout';
import type { DatabaseProvisioner, Sizing } from './provision';
import { walPrefix } from './provision';
import { planRestore } from './restore-plan';

/** A time as Postgres settings take it: `2026-01-01 10:00:00.123+00`. */
export function pgTime(iso: string): string {
  return new Date(iso).toISOString().replace('T', ' ').replace('Z', '+00');
}

export interface RestoreTarget {
  orgId: string;
  dbId: string;
  password: string;
  archiveTimeoutSeconds: number;
  diskMb: number;
  size: Sizing;
}

export interface Restored {
  /** Started from the template's seed cluster (no base backup yet), not a base backup. */
  fromSeed: boolean;
  sandboxId: string;
  volumeId: string;
  cpu: number;
  memory_mb: number;
}

/** Checks the target against the archive first: a bad target leaves nothing made. */
export async function restoreFromArchive(
  host: HostApi,
  queries: DatabaseQueries,
  provisioner: DatabaseProvisioner,
  source: Pick<DatabaseRecord, 'id' | 'parent_id'>,
  targetTime: string | undefined,
  into: RestoreTarget,
): Promise<Restored> {
  const plan = planRestore(
    await queries.backups(source.id),
    await host.archive.list(walPrefix(source)),
    targetTime,
    new Date(),
    source.parent_id === null, // created empty: it began as the seed cluster
  );
  // The host unpacks the base backup (or copies the seed) and copies the WAL files onto the new
  // volume, at its disk's speed: through the sandbox, 16 MiB took up to 50 s on a loaded host.
  const volumeId = await provisioner.newVolume(into.diskMb, {
    ...(plan.backup ? { unpack: plan.backup.key } : { seeded: true }),
    wal: plan.wal.map((w) => w.key),
  });
  let sandboxId: string | null = null;
  try {
    const sbx = await provisioner.sandbox(into.orgId, into.dbId, volumeId, into.size);
    sandboxId = sbx.id;
    await sbx.pg.restore({
      backup: plan.backup ? RESTORE_BASE : SEEDED_DATA,
      walDir: RESTORE_WAL,
      ...(targetTime !== undefined && { targetTime: pgTime(targetTime) }),
      password: into.password,
      archiveTimeoutSeconds: into.archiveTimeoutSeconds,
    });
    await host.files.remove(sbx.id, RESTORE_WAL, true).catch(() => undefined);
    return {
      fromSeed: plan.backup === null,
      sandboxId: sbx.id,
      volumeId,
      cpu: sbx.cpu,
      memory_mb: sbx.memory_mb,
    };
  } catch (err) {
    await provisioner.discard(into.orgId, sandboxId, volumeId);
    throw err;
  }
}
