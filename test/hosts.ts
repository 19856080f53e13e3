/** Checks shared by the several-hosts tests: where a sandbox is, and what it kept. */
import assert from 'node:assert/strict';
import { exec, type TestPlatform } from './fixture';

/** The host a sandbox's record names. */
export async function hostOf(p: TestPlatform, sandboxId: string): Promise<string> {
  return (await p.context.store.getSandboxById(sandboxId))!.host_id;
}

/** A persistent sandbox of the base template, placed on `hostId` by an admin's hint. */
export const persistentOn = (hostId: string) => ({
  template: 'base',
  persistent: true,
  host_id: hostId,
});

/** Writes /tmp/s and starts a process; returns the process's pid. */
export async function startProcess(p: TestPlatform, id: string): Promise<string> {
  const script = 'echo slept > /tmp/s; sleep 1000 & echo $! > /tmp/pid';
  await exec(p, id, { cmd: 'sh', args: ['-c', script] });
  return (await exec(p, id, { cmd: 'cat', args: ['/tmp/pid'] })).stdout.trim();
}

/** startProcess, then hibernates the sandbox; returns the process's pid. */
export async function sleepWithProcess(p: TestPlatform, id: string): Promise<string> {
  const pid = await startProcess(p, id);
  await p.json(`/v1/sandboxes/${id}/hibernate`, { method: 'POST' });
  const rec = await p.context.store.getSandboxById(id);
  assert.match(rec!.image_id ?? '', /^snap_/, 'its hibernation image is in the store');
  return pid;
}

/** The file and the process of sleepWithProcess are there. */
export async function assertFilesAndProcess(
  p: TestPlatform,
  id: string,
  pid: string,
): Promise<void> {
  assert.equal((await exec(p, id, { cmd: 'cat', args: ['/tmp/s'] })).stdout, 'slept\n');
  assert.equal((await exec(p, id, { cmd: 'sh', args: ['-c', `kill -0 ${pid}`] })).exit_code, 0);
}
