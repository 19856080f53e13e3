/**
 * A sandbox's own identity. Every sandbox starts as a copy of a memory image
 * (the template's, or a parent's for forks and snapshots), so whatever names
 * a machine was copied too. When the agent learns a new sandbox id it takes
 * a host name from it and writes a new machine id drawn from the kernel's
 * entropy (gVisor serves /dev/urandom from the host's generator, so it is
 * fresh in every copy, unlike random state held in a process's memory).
 */
import { closeSync, existsSync, openSync, readSync, writeFileSync } from 'node:fs';
import type { Spawner } from './spawner';

const MACHINE_ID_FILES = ['/etc/machine-id', '/var/lib/dbus/machine-id'];

/** The host name of a sandbox: its id with the underscore a host name may not hold. */
export function hostnameOf(sandboxId: string): string {
  return sandboxId.replace(/_/g, '-');
}

function kernelRandomHex(bytes: number): string {
  const buf = Buffer.alloc(bytes);
  const fd = openSync('/dev/urandom', 'r');
  try {
    readSync(fd, buf);
  } finally {
    closeSync(fd);
  }
  return buf.toString('hex');
}

export function assumeIdentity(sandboxId: string, spawner: Spawner): void {
  // Only as a sandbox's first process: an agent run on a host (the fake
  // driver of unit tests) must not rename the host.
  if (process.pid !== 1) return;
  spawner.setHostname(hostnameOf(sandboxId));
  const machineId = kernelRandomHex(16) + '\n';
  writeFileSync('/etc/machine-id', machineId);
  for (const file of MACHINE_ID_FILES.slice(1)) {
    if (existsSync(file)) writeFileSync(file, machineId);
  }
}
