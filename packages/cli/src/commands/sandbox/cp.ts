/**
 * `warren sandbox cp <src> <dst>`: copies one file into or out of a sandbox,
 * streaming, with the sandbox side written `<sandbox-id>:<path>`. A destination
 * that is a directory (or ends in '/') receives the file under its own name.
 */
import { stat } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';
import { Sandbox, WarrenError } from '@warren/sdk';
import type { Command } from 'commander';
import { parseCpTarget, type CpTarget } from '../../args';
import { connection } from '../../connection';

export function register(sandbox: Command): void {
  sandbox
    .command('cp')
    .description('copy a file between the local machine and a sandbox')
    // Parsed as arguments so a malformed operand is reported as a usage error.
    .argument('<src>', 'local path or <sandbox-id>:<path>', parseCpTarget)
    .argument('<dst>', 'local path or <sandbox-id>:<path>', parseCpTarget)
    .action(async (from: CpTarget, to: CpTarget, _opts: unknown, cmd: Command) => {
      if (from.sandboxId && to.sandboxId) {
        cmd.error('error: copying between two sandboxes is not supported');
      }
      if (to.sandboxId) {
        const sbx = await Sandbox.connect(to.sandboxId, connection(cmd));
        const remote = (await isRemoteDir(sbx, to.path))
          ? posix.join(to.path, basename(from.path))
          : to.path;
        await sbx.files.uploadFile(from.path, remote);
      } else if (from.sandboxId) {
        const sbx = await Sandbox.connect(from.sandboxId, connection(cmd));
        const local = (await isLocalDir(to.path))
          ? join(to.path, posix.basename(from.path))
          : to.path;
        await sbx.files.downloadFile(from.path, local);
      } else {
        cmd.error('error: one of <src> and <dst> must be <sandbox-id>:<path>');
      }
    });
}

async function isRemoteDir(sbx: Sandbox, path: string): Promise<boolean> {
  if (path.endsWith('/')) return true;
  try {
    return (await sbx.files.stat(path)).type === 'dir';
  } catch (err) {
    if (err instanceof WarrenError && err.code === 'FILE_NOT_FOUND') return false;
    throw err;
  }
}

async function isLocalDir(path: string): Promise<boolean> {
  if (path.endsWith('/')) return true;
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}
