/**
 * User-built templates: from a container image (OCI layout or `docker save`)
 * or from a recipe (a base template plus steps). Both end like the built-in
 * ones: a root filesystem in `<templates>/<name>/rootfs`, baked into a
 * snapshot with the guest agent, the start command running and the readiness
 * check passed. A failed build removes everything it made.
 *
 * Recipes run their steps in a sandbox restored from the base template (so a
 * step sees exactly what a sandbox of the base sees, with no network), then
 * tar the sandbox's root file system inside the sandbox, stream the tar out
 * over the agent channel and unpack it with the same safe extractor as image
 * layers. The new template's root is a full copy: it does not depend on its
 * base afterwards.
 */
import { chmod, lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  GUEST_AGENT_DIR,
  GUEST_CHANNEL_DIR,
  WarrenError,
  type ReadyProbe,
  type RecipeStep,
} from '@warren/protocol';
import type { HostCreateRequest } from '@warren/protocol';
import type { GuestChannel } from '../guest/channel';
import type { Baked } from './bake';
import {
  checkTemplateName,
  officialRecipe,
  type TemplateCatalog,
  type TemplateMeta,
  type TemplateRecord,
} from './catalog';
import { bakeOptionsOf, type BakeOptions } from './start';
import { openImage, unpackImage } from './oci-image';
import { runRecipe } from './recipe';

export interface Sizing {
  default_cpu?: number;
  default_memory_mb?: number;
  max_cpu?: number;
  max_memory_mb?: number;
}

/** What to build; kept beside the template (build.json) so a rebuild can repeat it. */
export interface TemplateBuildSpec extends Sizing {
  name: string;
  /** Recipe: the template to start from. */
  base?: string;
  /** Image: a server-side path (directory or tar). Uploads are a temporary file here. */
  image?: { path: string; uploaded?: boolean };
  steps?: RecipeStep[];
  start?: string[] | null;
  ready?: ReadyProbe | null;
}

/** A log line of a build; `step` is 1-based. */
export type BuildProgress = (line: string, step?: number) => void;

const BUILD_FILE = 'build.json';
const DEFAULT_SIZING = { default_cpu: 1, default_memory_mb: 512, max_cpu: 2, max_memory_mb: 4096 };

function sizing(spec: Sizing, fallback: Sizing): Required<Sizing> {
  const s = { ...DEFAULT_SIZING, ...fallback, ...spec };
  const out = {
    default_cpu: s.default_cpu,
    default_memory_mb: s.default_memory_mb,
    max_cpu: Math.max(s.max_cpu, s.default_cpu),
    max_memory_mb: Math.max(s.max_memory_mb, s.default_memory_mb),
  };
  if (spec.max_cpu !== undefined && spec.max_cpu < out.default_cpu)
    throw new WarrenError('INVALID_REQUEST', 'max_cpu is below default_cpu');
  if (spec.max_memory_mb !== undefined && spec.max_memory_mb < out.default_memory_mb)
    throw new WarrenError('INVALID_REQUEST', 'max_memory_mb is below default_memory_mb');
  return out;
}

/** What every root needs to be a sandbox root: the agent's mount points and a /tmp. */
async function prepareRoot(rootfs: string): Promise<void> {
  for (const dir of [GUEST_AGENT_DIR, GUEST_CHANNEL_DIR, '/tmp', '/proc', '/dev', '/sys']) {
    const p = join(rootfs, dir);
    const st = await lstat(p).catch(() => null);
    if (st?.isDirectory()) continue;
    // A symlink or file here would redirect the mount: replace it with a plain directory.
    if (st) await rm(p, { recursive: true, force: true });
    await mkdir(p, { recursive: true });
  }
  await chmod(join(rootfs, 'tmp'), 0o1777);
}

/** What a build needs of its host: the catalog, the bake, and build sandboxes. */
export interface BuildHost {
  readonly catalog: TemplateCatalog;
  bake(
    rootfs: string,
    cpu: number,
    memoryMb: number,
    imageDir: string,
    opts: BakeOptions,
  ): Promise<Baked>;
  /** The bake of a small recipe: its build sandbox checkpointed as it is (null: too large). */
  bakeBuildSandbox(
    id: string,
    rootfsBytes: number,
    imageDir: string,
    opts: BakeOptions,
  ): Promise<Baked | null>;
  /** Creates a sandbox and returns the channel to its guest agent. */
  startSandbox(req: HostCreateRequest): Promise<GuestChannel>;
  /** Removes a build sandbox in the background (settle() waits for it). */
  dropSandbox(id: string): void;
}

export class TemplateBuilder {
  private readonly building = new Set<string>();

  constructor(private readonly host: BuildHost) {}

  isBuilding(name: string): boolean {
    return this.building.has(name);
  }

  /** Builds a new template (or, with `replace`, rebuilds one); refuses a name that exists. */
  async build(
    spec: TemplateBuildSpec,
    progress: BuildProgress,
    opts: { replace?: boolean } = {},
  ): Promise<TemplateRecord> {
    checkTemplateName(spec.name);
    if (!!spec.base === !!spec.image)
      throw new WarrenError('INVALID_REQUEST', 'give exactly one of base (a recipe) or image');
    if (spec.image && spec.steps?.length)
      throw new WarrenError('INVALID_REQUEST', 'steps need a base template, not an image');
    if (this.building.has(spec.name))
      throw new WarrenError('TEMPLATE_EXISTS', `template ${spec.name} is being built`);
    if (!opts.replace && officialRecipe(spec.name))
      throw new WarrenError(
        'TEMPLATE_EXISTS',
        `${spec.name} is the name of an official template (build it with POST /v1/templates/${spec.name}/rebuild)`,
      );
    if (!opts.replace && (await this.host.catalog.read(spec.name)))
      throw new WarrenError('TEMPLATE_EXISTS', `template ${spec.name} already exists`);
    const base = spec.base ? await this.host.catalog.get(spec.base) : null;
    if (base?.name === spec.name)
      throw new WarrenError('INVALID_REQUEST', 'a template cannot be its own base');
    const size = sizing(spec, base ?? {});
    this.building.add(spec.name);
    const dir = this.host.catalog.dir(spec.name);
    const started = Date.now();
    try {
      await rm(dir, { recursive: true, force: true });
      await this.host.catalog.markBuilding({
        name: spec.name,
        defaultCpu: size.default_cpu,
        defaultMemoryMb: size.default_memory_mb,
        maxCpu: size.max_cpu,
        maxMemoryMb: size.max_memory_mb,
        source: base ? 'recipe' : 'image',
      });
      const rootfs = join(dir, 'rootfs');
      await mkdir(rootfs, { mode: 0o755 });
      const imageDir = join(dir, 'snapshot.tmp');
      let meta: Omit<
        TemplateMeta,
        'name' | 'defaultCpu' | 'defaultMemoryMb' | 'maxCpu' | 'maxMemoryMb'
      >;
      let baked: Baked | null = null;
      if (base) {
        // The base's image was baked for its own largest size: a larger one needs a bake.
        const fits = size.max_cpu <= base.max_cpu && size.max_memory_mb <= base.max_memory_mb;
        ({ meta, baked } = await runRecipe(this.host, base, spec, rootfs, progress, {
          imageDir: fits ? imageDir : null,
        }));
      } else {
        const image = await openImage(
          (spec.image as { path: string }).path,
          join(dir, 'image.tmp'),
        );
        progress(
          `${image.format === 'oci' ? 'OCI image layout' : 'docker save archive'}, ${image.layers.length} layers`,
        );
        const layers = await unpackImage(image, rootfs, (l) => progress(l));
        await rm(join(dir, 'image.tmp'), { recursive: true, force: true });
        meta = {
          source: 'image',
          layers,
          env: image.defaults.env,
          workdir: image.defaults.workdir,
          user: image.defaults.user,
          start: spec.start !== undefined ? spec.start : image.defaults.start,
          ready: spec.ready ?? null,
        };
      }
      if (!baked) {
        await prepareRoot(rootfs);
        // Processes start in the workdir, or /root; an image without /root starts them in /.
        if (!meta.workdir && !(await lstat(join(rootfs, 'root')).catch(() => null)))
          meta.workdir = '/';
        progress('baking snapshot');
        baked = await this.host.bake(
          rootfs,
          size.max_cpu,
          size.max_memory_mb,
          imageDir,
          bakeOptionsOf(meta, progress),
        );
      }
      const { image: img, ...kept } = spec;
      await writeFile(
        join(dir, BUILD_FILE),
        JSON.stringify({ ...kept, ...(img && !img.uploaded && { image: img }) }),
      );
      const rec = await this.host.catalog.commit(
        {
          name: spec.name,
          defaultCpu: size.default_cpu,
          defaultMemoryMb: size.default_memory_mb,
          maxCpu: size.max_cpu,
          maxMemoryMb: size.max_memory_mb,
          ...meta,
          buildMs: Date.now() - started,
        },
        baked,
      );
      progress(`template ${spec.name} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return rec;
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    } finally {
      this.building.delete(spec.name);
    }
  }

  /**
   * Builds a user template again from what it was built from: a recipe runs
   * again on its base as it is now, an image path is read again. An uploaded
   * image is not kept, so its template is baked again from its root.
   */
  async rebuild(rec: TemplateRecord, progress: BuildProgress): Promise<TemplateRecord> {
    const spec = await this.buildSpec(rec.name);
    if (spec) return this.build(spec, progress, { replace: true });
    if (this.building.has(rec.name))
      throw new WarrenError('TEMPLATE_EXISTS', `template ${rec.name} is being built`);
    this.building.add(rec.name);
    const started = Date.now();
    try {
      progress('baking snapshot again from the unpacked image');
      const baked = await this.host.bake(
        rec.rootfs,
        rec.max_cpu,
        rec.max_memory_mb,
        join(this.host.catalog.dir(rec.name), 'snapshot.tmp'),
        bakeOptionsOf(rec, progress),
      );
      return await this.host.catalog.commit(
        {
          name: rec.name,
          defaultCpu: rec.default_cpu,
          defaultMemoryMb: rec.default_memory_mb,
          maxCpu: rec.max_cpu,
          maxMemoryMb: rec.max_memory_mb,
          source: rec.source,
          base: rec.base,
          layers: rec.layers,
          env: rec.env,
          workdir: rec.workdir,
          user: rec.user,
          start: rec.start,
          ready: rec.ready,
          buildMs: Date.now() - started,
        },
        baked,
      );
    } finally {
      this.building.delete(rec.name);
    }
  }

  /** The spec a template was built with, for a rebuild (null for built-in and uploaded ones). */
  async buildSpec(name: string): Promise<TemplateBuildSpec | null> {
    checkTemplateName(name);
    try {
      const spec = JSON.parse(
        await readFile(join(this.host.catalog.dir(name), BUILD_FILE), 'utf8'),
      ) as TemplateBuildSpec;
      // An upload's image is not kept (its record has neither base nor image).
      return spec.base !== undefined || spec.image !== undefined ? spec : null;
    } catch {
      return null;
    }
  }
}
