/**
 * Recipe builds: the steps run in a sandbox restored from the base template
 * (so a step sees exactly what a sandbox of the base sees, with no network);
 * then what they changed is captured into the new template's root.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GUEST_PATHS, WarrenError, type RecipeStep } from '@warren/protocol';
import type { BuildHost, BuildProgress, TemplateBuildSpec } from './builder';
import type { TemplateMeta, TemplateRecord } from './catalog';
import { captureRecipeRoot, copyRoot, markBuildStart } from './recipe-capture';
import { runInGuest } from './start';

function failed(step: number, what: string, message: string, output?: string): WarrenError {
  return new WarrenError('TEMPLATE_BUILD_FAILED', `step ${step} (${what}) failed: ${message}`, {
    step,
    ...(output !== undefined && { output }),
  });
}

function describe(step: RecipeStep): string {
  const short = (s: string) => (s.length > 60 ? `${s.slice(0, 57)}...` : s);
  if ('run' in step) return `run: ${short(step.run)}`;
  if ('copy' in step) return `copy: ${step.copy.dest}`;
  if ('env' in step) return `env: ${Object.keys(step.env).join(', ')}`;
  if ('workdir' in step) return `workdir: ${step.workdir}`;
  if ('start' in step) return `start: ${short(step.start.join(' '))}`;
  return `ready: ${short(step.ready.cmd.join(' '))}`;
}

export async function runRecipe(
  host: BuildHost,
  base: TemplateRecord,
  spec: TemplateBuildSpec,
  rootfs: string,
  progress: BuildProgress,
): Promise<
  Omit<TemplateMeta, 'name' | 'defaultCpu' | 'defaultMemoryMb' | 'maxCpu' | 'maxMemoryMb'>
> {
  const state = {
    env: { ...(base.env ?? {}) },
    workdir: base.workdir ?? null,
    start: spec.start !== undefined ? spec.start : (base.start ?? null),
    ready: spec.ready !== undefined ? spec.ready : (base.ready ?? null),
  };
  const id = `bld-${randomBytes(6).toString('hex')}`;
  progress(`starting a build sandbox from ${base.name}`);
  // The new root's copy of the base's is made on the host meanwhile.
  const copied = copyRoot(base.rootfs, rootfs);
  const started = host.startSandbox({
    id,
    template: base.name,
    cpu: base.max_cpu,
    memory_mb: Math.min(base.max_memory_mb, 2048),
    env: {},
  });
  const [copy, start] = await Promise.allSettled([copied, started]);
  if (start.status === 'rejected') throw start.reason;
  const channel = start.value;
  try {
    if (copy.status === 'rejected') throw copy.reason;
    await markBuildStart(channel);
    const steps = spec.steps ?? [];
    for (const [i, step] of steps.entries()) {
      const n = i + 1;
      const what = describe(step);
      progress(`step ${n}/${steps.length}: ${what}`, n);
      try {
        if ('run' in step) {
          const res = await runInGuest(
            channel,
            {
              cmd: '/bin/sh',
              args: ['-c', step.run],
              env: state.env,
              cwd: state.workdir ?? '/',
              timeout_ms: (step.timeout ?? 600) * 1000,
            },
            (line) => progress(line, n),
          );
          if (res.timedOut)
            throw failed(n, what, `timed out after ${step.timeout ?? 600} s`, res.tail);
          if (res.exitCode !== 0) throw failed(n, what, `exit code ${res.exitCode}`, res.tail);
        } else if ('copy' in step) {
          const dest = step.copy.dest.startsWith('/')
            ? step.copy.dest
            : `${state.workdir ?? '/'}/${step.copy.dest}`;
          const parent = dest.slice(0, dest.lastIndexOf('/')) || '/';
          await channel.json({
            method: 'POST',
            path: GUEST_PATHS.filesMkdir,
            json: { path: parent, parents: true },
          });
          await channel.upload(
            dest,
            Readable.from([Buffer.from(step.copy.content, 'base64')]),
            step.copy.mode,
          );
        } else if ('env' in step) {
          Object.assign(state.env, step.env);
        } else if ('workdir' in step) {
          await channel.json({
            method: 'POST',
            path: GUEST_PATHS.filesMkdir,
            json: { path: step.workdir, parents: true },
          });
          state.workdir = step.workdir;
        } else if ('start' in step) {
          state.start = step.start;
        } else {
          state.ready = step.ready;
        }
      } catch (err) {
        if (err instanceof WarrenError && err.code === 'TEMPLATE_BUILD_FAILED') throw err;
        throw failed(n, what, err instanceof Error ? err.message : String(err));
      }
    }
    progress('capturing the changes');
    await captureRecipeRoot(channel, base.rootfs, rootfs, (l) => progress(l));
  } finally {
    await host.destroySandbox(id);
  }
  return {
    source: 'recipe',
    base: base.name,
    env: state.env,
    workdir: state.workdir,
    user: base.user ?? null,
    start: state.start,
    ready: state.ready,
  };
}
