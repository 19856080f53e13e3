/**
 * What a sandbox was started with, kept in its work directory so that a wake
 * restores the same mounts and disk, and where its hibernation image lives.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxSpec } from '../runtime/driver';
import type { HostVolume } from '../storage/sandbox-disk';

const SPEC_FILE = 'spec.json';
const STORAGE_FILE = 'storage.json';
const HIBERNATION_IMAGE = 'hibernated';

/** Disk size and volumes of a sandbox. */
export interface SandboxStorage {
  diskMb: number | null;
  volumes: HostVolume[];
}

export function hibernationImage(workDir: string): string {
  return join(workDir, HIBERNATION_IMAGE);
}

export async function writeState(
  workDir: string,
  spec: SandboxSpec,
  storage: SandboxStorage,
): Promise<void> {
  await writeFile(join(workDir, SPEC_FILE), JSON.stringify(spec));
  await writeFile(join(workDir, STORAGE_FILE), JSON.stringify(storage));
}

export async function readSpec(workDir: string): Promise<SandboxSpec> {
  return JSON.parse(await readFile(join(workDir, SPEC_FILE), 'utf8')) as SandboxSpec;
}

/** Sandboxes from before disk limits have no storage file: no disk, no volumes. */
export async function readStorage(workDir: string): Promise<SandboxStorage> {
  return readFile(join(workDir, STORAGE_FILE), 'utf8').then(
    (t) => JSON.parse(t) as SandboxStorage,
    () => ({ diskMb: null, volumes: [] }),
  );
}
