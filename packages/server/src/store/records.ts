/**
 * Records as the rest of the control plane sees them: the JSON columns of the
 * sandbox and snapshot tables decoded, here and nowhere else.
 */
import type { Selectable } from 'kysely';
import type { SandboxNetwork, VolumeAttachment } from '@warren/protocol';
import type { SandboxTable, SnapshotTable } from './schema';

export type SandboxRow = Selectable<SandboxTable>;
export type SnapshotRow = Selectable<SnapshotTable>;

type SandboxJson = 'metadata' | 'env' | 'lineage' | 'network' | 'volumes';
type SnapshotJson = 'env' | 'lineage' | 'network';

export interface SandboxRecord extends Omit<SandboxRow, SandboxJson> {
  metadata: Record<string, string>;
  env: Record<string, string>;
  /** Ancestor ids, the root first and the parent last. */
  lineage: string[];
  network: SandboxNetwork;
  volumes: VolumeAttachment[];
}

export interface SnapshotRecord extends Omit<SnapshotRow, SnapshotJson> {
  /** The captured sandbox's env: restores start with it. */
  env: Record<string, string>;
  /** The captured sandbox's ancestors (not the sandbox itself). */
  lineage: string[];
  network: SandboxNetwork;
}

/** Records from before networking have none: no egress at all. */
function network(text: string | null): SandboxNetwork {
  return text ? (JSON.parse(text) as SandboxNetwork) : { policy: { mode: 'none' }, secrets: [] };
}

export function decodeSandbox(row: SandboxRow): SandboxRecord {
  return {
    ...row,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    env: JSON.parse(row.env) as Record<string, string>,
    lineage: JSON.parse(row.lineage) as string[],
    network: network(row.network),
    volumes: JSON.parse(row.volumes) as VolumeAttachment[],
  };
}

/** Encodes the JSON fields that are present; others pass as they are. */
export function encodeSandbox(rec: Partial<SandboxRecord>): Partial<SandboxRow> {
  const { metadata, env, lineage, network: net, volumes, ...plain } = rec;
  return {
    ...plain,
    ...(metadata !== undefined && { metadata: JSON.stringify(metadata) }),
    ...(env !== undefined && { env: JSON.stringify(env) }),
    ...(lineage !== undefined && { lineage: JSON.stringify(lineage) }),
    ...(net !== undefined && { network: JSON.stringify(net) }),
    ...(volumes !== undefined && { volumes: JSON.stringify(volumes) }),
  };
}

export function decodeSnapshot(row: SnapshotRow): SnapshotRecord {
  return {
    ...row,
    env: JSON.parse(row.env) as Record<string, string>,
    lineage: JSON.parse(row.lineage) as string[],
    network: network(row.network),
  };
}

export function encodeSnapshot(rec: SnapshotRecord): SnapshotRow {
  return {
    ...rec,
    env: JSON.stringify(rec.env),
    lineage: JSON.stringify(rec.lineage),
    network: JSON.stringify(rec.network),
  };
}
