/**
 * Recipe builds: the steps run in a sandbox restored from the base template
 * (so a step sees exactly what a sandbox of the base sees, with no network).
 * Then either that sandbox becomes the template's image as it is, its few
 * changes kept in the image beside a copy of the base's root
 * (bakeBuildSandbox), or what the steps changed is captured into the new
 * template's root, which is then baked.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GUEST_PATHS, WarrenError, type RecipeStep } from '@warren/protocol';
import type { Baked } from './bake';
import type { BuildHost, BuildProgress, TemplateBuildSpec } from './builder';
import type { TemplateMeta, TemplateRecord } from './catalog';
import { captureRecipeRoot, copyRoot, markBuildStart } from './recipe-capture';
import { bakeOptionsOf, runInGuest } from './start';

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

type RecipeMeta = Omit<
  TemplateMeta,
  'name' | 'defaultCpu' | 'defaultMemoryMb' | 'maxCpu' | 'maxMemoryMb'
>;

/**
 * Runs the steps; returns the template's metadata, and its baked image when
 * the build sandbox became it (else `rootfs` holds the changes, to be baked).
 * `imageDir` null: the build sandbox may not become the template's image.
 */
export async function runRecipe(
  host: BuildHost,
  base: TemplateRecord,
  spec: TemplateBuildSpec,
  rootfs: string,
  progress: BuildProgress,
  opts: { imageDir: string | null },
): Promise<{ meta: RecipeMeta; baked: Baked | null }> {
  const state = {
    env: { ...(base.env ?? {}) },
    workdir: base.workdir ?? null,
    start: spec.start !== undefined ? spec.start : (base.start ?? null),
    ready: spec.ready !== undefined ? spec.ready : (base.ready ?? null),
  };
  const id = `bld-${randomBytes(6).toString('hex')}`;
  progress(`starting a build sandbox from ${base.name}`);
  const channel = await host.startSandbox({
    id,
    template: base.name,
    cpu: base.max_cpu,
    memory_mb: Math.min(base.max_memory_mb, 2048),
    env: {},
  });
  // The new root's copy of the base's is made on the host while the steps
  // run (made beside the restore, the two slowed each other down). Its hard
  // links change the ctime of the base's files after the marker: the capture
  // tells those apart (sameAsBase).
  const copied = copyRoot(base.rootfs, rootfs);
  const copiedOrFailed = copied.then(
    () => undefined,
    () => undefined,
  );
  // Files a step changes get a later ctime (see markBuildStart).
  const stepsSince = Date.now();
  try {
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
    const meta: RecipeMeta = {
      source: 'recipe',
      base: base.name,
      env: state.env,
      workdir: state.workdir,
      user: base.user ?? null,
      start: state.start,
      ready: state.ready,
    };
    if (!opts.imageDir) progress(`sized above ${base.name}: capturing the changes into a root`);
    const baked =
      opts.imageDir &&
      (await host.bakeBuildSandbox(
        id,
        base.rootfs_bytes,
        opts.imageDir,
        bakeOptionsOf(meta, progress),
      ));
    await copied;
    if (baked) return { meta: { ...meta, changesSince: base.changes_since ?? stepsSince }, baked };
    progress('capturing the changes');
    // A base whose own changes are in its image (not in its root): they count as changes too.
    await markBuildStart(channel, base.changes_since ?? stepsSince);
    await captureRecipeRoot(channel, base.rootfs, rootfs, (l) => progress(l));
    return { meta, baked: null };
  } finally {
    await copiedOrFailed;
    host.dropSandbox(id);
  }
}
