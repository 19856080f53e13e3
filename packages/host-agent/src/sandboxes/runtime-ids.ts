/**
 * Runtime container ids of a sandbox. Its first container has the sandbox's
 * own id; each wake restores into a new one, `<sandbox id>.<n>`. runsc takes
 * one to two seconds after a hibernation's checkpoint to forget the stopped
 * container (`runsc delete`), and a restore under a fresh id does not have to
 * wait for that: the old container is removed in the background. Each
 * container has its own cgroups (named by its id) and its own network
 * namespace (made by runsc for the sandbox process, gone with it), so nothing
 * of the old one is shared with the new.
 */

const GENERATION = /^(.+)\.(\d+)$/;

/** The sandbox (or bake) a runtime container belongs to. */
export function ownerOf(containerId: string): string {
  return GENERATION.exec(containerId)?.[1] ?? containerId;
}

/** The container id the next wake of a sandbox restores into. */
export function nextContainerId(sandboxId: string, current: string): string {
  const m = GENERATION.exec(current);
  const n = m && m[1] === sandboxId ? Number(m[2]) : 0;
  return `${sandboxId}.${n + 1}`;
}
