/**
 * Templates on disk: a root filesystem, default and maximum sizing, and a
 * baked snapshot (a booted sandbox with its guest agent ready, checkpointed)
 * that every create restores.
 *
 *   <templates>/<name>/rootfs/         read-only root shared by every sandbox
 *   <templates>/<name>/snapshot/       checkpoint image
 *   <templates>/<name>/template.json   metadata below
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { ID_PREFIX, WarrenError, newId, type ReadyProbe, type Template } from '@warren/protocol';
import { OfficialBuilds, notBuiltError } from './official';
import { finishPostgresRoot } from './postgres-root';
import { deriveRoot } from './derived-root';
import type { Baked } from './bake';
import { duBytes } from './disk-usage';
import { debootstrap, type Progress } from './rootfs';
import { finishTypescriptRoot } from './typescript-root';

/** What a template record holds besides its build results. */
export interface TemplateMeta {
  name: string;
  defaultCpu: number;
  defaultMemoryMb: number;
  maxCpu: number;
  maxMemoryMb: number;
  /** Size limit of what a sandbox writes to its files: default and maximum. */
  defaultDiskMb?: number;
  maxDiskMb?: number;
  source?: 'builtin' | 'image' | 'recipe';
  base?: string;
  layers?: Array<{ digest: string; size: number }>;
  env?: Record<string, string>;
  workdir?: string | null;
  user?: string | null;
  start?: string[] | null;
  ready?: ReadyProbe | null;
  buildMs?: number;
  /** See TemplateRecord.changes_since. */
  changesSince?: number;
}

/** A built-in template: a Debian root made with debootstrap, then the same bake as any other. */
export interface TemplateRecipe extends TemplateMeta {
  /** What is in it, for the template list. */
  description: string;
  suite: string;
  packages: string[];
  /**
   * Runs on the host after debootstrap, on the new root (not yet in place):
   * the root counts as built only once this has succeeded.
   */
  finish?: (rootfs: string, progress: Progress) => Promise<void>;
  /**
   * Made from this official template's root (copied, then `packages` installed
   * with apt-get in a chroot: derived-root.ts) instead of by debootstrap.
   */
  from?: string;
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** Template names become directory names: refuse anything that could leave the templates dir. */
export function checkTemplateName(name: string): void {
  if (!NAME.test(name) || name.includes('..'))
    throw new WarrenError(
      'INVALID_REQUEST',
      `invalid template name ${JSON.stringify(name)}: use a-z, 0-9, ".", "_" and "-"`,
    );
}

/** Disk sizing of templates that do not set their own. */
export const DEFAULT_DISK_MB = 2048;
export const MAX_DISK_MB = 20480;

/** A template record's sizing fields from its metadata. */
export function sizing(meta: TemplateMeta) {
  return {
    default_cpu: meta.defaultCpu,
    default_memory_mb: meta.defaultMemoryMb,
    max_cpu: meta.maxCpu,
    max_memory_mb: meta.maxMemoryMb,
    default_disk_mb: meta.defaultDiskMb ?? DEFAULT_DISK_MB,
    max_disk_mb: meta.maxDiskMb ?? MAX_DISK_MB,
  };
}

/** The official templates this release knows how to build. */
export const BUILTIN_TEMPLATES: Record<string, TemplateRecipe> = {
  base: {
    name: 'base',
    description:
      'Debian 12 (bookworm) minimal with python3 and its language server (python3-pylsp, pyflakes)',
    suite: 'bookworm',
    // pylsp (with jedi; setuptools for its plugins) and pyflakes serve /v1/sandboxes/:id/lsp: 19 MB.
    packages: ['python3', 'python3-pylsp', 'python3-pyflakes', 'python3-setuptools'],
    defaultCpu: 1,
    defaultMemoryMb: 512,
    maxCpu: 2,
    maxMemoryMb: 4096,
    defaultDiskMb: DEFAULT_DISK_MB,
    maxDiskMb: MAX_DISK_MB,
  },
  // Built only when asked (WARREN_TEMPLATES or POST /v1/templates/<name>/rebuild).
  // The code interpreter's (docs/code-interpreter.md): made from the base root by apt-get.
  'code-interpreter': {
    name: 'code-interpreter',
    description:
      'Debian 12 with a Jupyter kernel (ipykernel), numpy, pandas, matplotlib, python-lsp-server and Node.js',
    suite: 'bookworm',
    from: 'base',
    packages: [
      'python3-ipykernel',
      'python3-jupyter-client',
      'python3-numpy',
      'python3-pandas',
      'python3-matplotlib',
      'python3-pylsp',
      'nodejs',
    ],
    defaultCpu: 1,
    defaultMemoryMb: 1024,
    maxCpu: 2,
    maxMemoryMb: 4096,
    env: { MPLBACKEND: 'Agg' },
  },
  // Made from the base root: Node.js 18 by apt-get, typescript-language-server from npm (typescript-root.ts).
  typescript: {
    name: 'typescript',
    description:
      'Debian 12 with Node.js 18, TypeScript 5 and typescript-language-server (the TypeScript language server)',
    suite: 'bookworm',
    from: 'base',
    packages: ['nodejs'],
    defaultCpu: 1,
    defaultMemoryMb: 1024,
    maxCpu: 2,
    maxMemoryMb: 4096,
    finish: finishTypescriptRoot,
  },
  // Managed databases: Debian 13, a seed cluster made at build (postgres-root.ts).
  'postgres-17': {
    name: 'postgres-17',
    description:
      'Debian 13 with PostgreSQL 17, pgvector and PgBouncer: the template of managed databases',
    suite: 'trixie',
    packages: ['postgresql-17', 'postgresql-17-pgvector', 'pgbouncer'],
    defaultCpu: 1,
    defaultMemoryMb: 1024,
    maxCpu: 2,
    maxMemoryMb: 4096,
    finish: finishPostgresRoot,
  },
};

/** The official template of that name (own keys only: not `constructor` and the like). */
export function officialRecipe(name: string): TemplateRecipe | undefined {
  return Object.hasOwn(BUILTIN_TEMPLATES, name) ? BUILTIN_TEMPLATES[name] : undefined;
}

export interface TemplateRecord extends Template {
  /** The process running the build while the state is `building`. */
  builder_pid?: number;
  rootfs: string;
  snapshot: string;
  guest_key: string;
  runtime_version: string;
  /** The image in the shared snapshot store it was fetched from (share.ts). */
  published?: string;
  /**
   * Set when the root is a copy of the base's and the image holds what the
   * recipe's steps (and those of its bases) changed, made since then (ms
   * since the epoch): a recipe built on it captures those changes too.
   */
  changes_since?: number;
}

/** Whether another process that is still alive is building (its pid recorded at the start). */
function buildingElsewhere(pid: number | undefined): boolean {
  if (pid === undefined || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Official templates keep one id from before their first build on (not random). */
export function officialId(name: string): string {
  const digest = createHash('sha256').update(`warren-official-template:${name}`).digest();
  let out = '';
  for (const b of digest.subarray(0, 16)) out += '0123456789abcdefghijklmnopqrstuvwxyz'[b % 36];
  return `${ID_PREFIX.template}_${out}`;
}

export class TemplateCatalog {
  /** Builds of official templates (their state while they are not on disk). */
  readonly official = new OfficialBuilds();

  constructor(
    readonly root: string,
    private readonly mirror: string,
  ) {}

  dir(name: string): string {
    return join(this.root, name);
  }

  async list(): Promise<TemplateRecord[]> {
    await mkdir(this.root, { recursive: true });
    const out: TemplateRecord[] = [];
    for (const name of (await readdir(this.root)).sort()) {
      if (name.startsWith('.')) continue; // guest bundles, uploads
      const rec = await this.read(name);
      if (rec) out.push(rec);
    }
    return out;
  }

  async read(name: string): Promise<TemplateRecord | null> {
    if (!NAME.test(name)) return null;
    try {
      return {
        default_disk_mb: DEFAULT_DISK_MB,
        max_disk_mb: MAX_DISK_MB,
        ...(JSON.parse(
          await readFile(join(this.dir(name), 'template.json'), 'utf8'),
        ) as Partial<TemplateRecord>),
      } as TemplateRecord;
    } catch {
      return null;
    }
  }

  async get(name: string): Promise<TemplateRecord> {
    const rec = await this.read(name);
    if (!rec && officialRecipe(name)) {
      if (this.official.isBuilding(name))
        throw new WarrenError('TEMPLATE_NOT_READY', `template ${name} is building`);
      throw notBuiltError(name, this.official.lastError(name));
    }
    if (!rec)
      throw new WarrenError(
        'TEMPLATE_NOT_FOUND',
        `template ${JSON.stringify(name)} does not exist`,
      );
    if (rec.state !== 'ready')
      throw new WarrenError('TEMPLATE_NOT_READY', `template ${name} is ${rec.state}`);
    return rec;
  }

  /**
   * Builds the root filesystem of a built-in template if it is missing. A
   * recipe with a `finish` step gets its root built under another name first
   * and renamed into place only once `finish` succeeded, so a root that has
   * `usr/bin` is always a complete one.
   */
  async ensureRootfs(recipe: TemplateRecipe, progress: Progress): Promise<string> {
    const rootfs = join(this.dir(recipe.name), 'rootfs');
    if (existsSync(join(rootfs, 'usr/bin'))) return rootfs;
    const base = recipe.from !== undefined ? officialRecipe(recipe.from) : undefined;
    if (base) {
      const baseRoot = await this.ensureRootfs(base, progress);
      progress(`building root filesystem of template ${recipe.name} (${base.name} + apt-get)`);
      const building = `${rootfs}.build`;
      try {
        const aptCache = join(this.root, '.apt-cache', recipe.suite);
        await deriveRoot(building, { baseRoot, packages: recipe.packages, aptCache }, progress);
        if (recipe.finish) await recipe.finish(building, progress);
        await rm(rootfs, { recursive: true, force: true });
        await rename(building, rootfs);
      } finally {
        await rm(building, { recursive: true, force: true });
      }
      return rootfs;
    }
    progress(`building root filesystem of template ${recipe.name} (debootstrap ${recipe.suite})`);
    const opts = { suite: recipe.suite, packages: recipe.packages, mirror: this.mirror };
    if (!recipe.finish) {
      await debootstrap(rootfs, opts, progress);
      return rootfs;
    }
    const building = `${rootfs}.build`;
    try {
      await debootstrap(building, opts, progress);
      progress(`finishing root filesystem of template ${recipe.name}`);
      await recipe.finish(building, progress);
      await rm(rootfs, { recursive: true, force: true });
      await rename(building, rootfs);
    } finally {
      await rm(building, { recursive: true, force: true });
    }
    return rootfs;
  }

  /** Writes the record of a freshly baked snapshot (moved into place atomically). */
  async commit(recipe: TemplateMeta, baked: Baked): Promise<TemplateRecord> {
    const { image: bakedImage, guestKey, runtimeVersion } = baked;
    const dir = this.dir(recipe.name);
    const snapshot = join(dir, 'snapshot');
    const previous = await this.read(recipe.name);
    await rm(snapshot, { recursive: true, force: true });
    await rename(bakedImage, snapshot);
    const rec: TemplateRecord = {
      id: previous?.id ?? (recipe.source ? newId('template') : officialId(recipe.name)),
      name: recipe.name,
      state: 'ready',
      ...sizing(recipe),
      rootfs_bytes: baked.rootfsBytes,
      snapshot_bytes: await duBytes(snapshot),
      built_at: new Date().toISOString(),
      source: recipe.source ?? 'builtin',
      ...(recipe.base !== undefined && { base: recipe.base }),
      ...(recipe.layers !== undefined && { layers: recipe.layers }),
      ...(recipe.buildMs !== undefined && { build_ms: recipe.buildMs }),
      ...(recipe.changesSince !== undefined && { changes_since: recipe.changesSince }),
      env: recipe.env ?? {},
      workdir: recipe.workdir ?? null,
      user: recipe.user ?? null,
      start: recipe.start ?? null,
      ready: recipe.ready ?? null,
      rootfs: join(dir, 'rootfs'),
      snapshot,
      guest_key: guestKey,
      runtime_version: runtimeVersion,
    };
    await this.writeRecord(rec);
    return rec;
  }

  private async writeRecord(rec: TemplateRecord): Promise<void> {
    const dir = this.dir(rec.name);
    await writeFile(join(dir, 'template.json.tmp'), JSON.stringify(rec, null, 2));
    await rename(join(dir, 'template.json.tmp'), join(dir, 'template.json'));
  }

  /** Writes the record of a template whose root and snapshot were put in place (fetched). */
  async install(rec: TemplateRecord): Promise<TemplateRecord> {
    await this.writeRecord(rec);
    return rec;
  }

  /** Shows a template as `building` while its first build runs (creates get TEMPLATE_NOT_READY). */
  async markBuilding(meta: TemplateMeta): Promise<void> {
    checkTemplateName(meta.name);
    const previous = await this.read(meta.name);
    await mkdir(this.dir(meta.name), { recursive: true });
    await this.writeRecord({
      ...(previous ?? {
        id: newId('template'),
        name: meta.name,
        ...sizing(meta),
        rootfs_bytes: 0,
        snapshot_bytes: 0,
        built_at: new Date().toISOString(),
        source: meta.source,
        rootfs: join(this.dir(meta.name), 'rootfs'),
        snapshot: join(this.dir(meta.name), 'snapshot'),
        guest_key: '',
        runtime_version: '',
      }),
      state: 'building',
      builder_pid: process.pid,
    });
  }

  /** Removes a template and everything in its directory. */
  async remove(name: string): Promise<void> {
    checkTemplateName(name);
    await rm(this.dir(name), { recursive: true, force: true });
  }

  /**
   * After a restart: builds that were cut off leave no half-made template behind.
   * A build another live process is running (a second platform on the same
   * templates directory) is not cut off and is left alone.
   */
  async removeInterrupted(): Promise<string[]> {
    const removed: string[] = [];
    for (const rec of await this.list()) {
      if (rec.state === 'building' && !buildingElsewhere(rec.builder_pid)) {
        await this.remove(rec.name);
        removed.push(rec.name);
      }
    }
    return removed;
  }
}
