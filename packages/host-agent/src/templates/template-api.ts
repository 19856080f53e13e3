/**
 * HostTemplateApi: built-in templates, builds from recipes and images
 * (uploaded or by server path), rebuilds and removal. What crosses the API is
 * the template as users see it; its host paths and build keys stay here.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  TEMPLATE_UPLOAD_LIMIT,
  WarrenError,
  type HostTemplateApi,
  type Template,
} from '@warren/protocol';
import type { HostContext } from '../context';
import { ensureBuiltin } from './bake';
import {
  BUILTIN_TEMPLATES,
  officialId,
  officialRecipe,
  sizing,
  type TemplateCatalog,
  type TemplateRecipe,
  type TemplateRecord,
} from './catalog';
import { buildHint } from './official';
import { TemplateBuilder, type BuildHost } from './builder';
import { fetchTemplate, publishTemplate, sharedImageId } from './share';

/** The API view of a template: its host-side paths and build keys stay internal. */
function toApi(t: TemplateRecord): Template {
  const {
    rootfs,
    snapshot,
    guest_key,
    runtime_version,
    builder_pid,
    published,
    changes_since,
    ...api
  } = t;
  const recipe = officialRecipe(t.name);
  if (!recipe || (t.source ?? 'builtin') !== 'builtin') return api;
  return { ...api, description: recipe.description, build: buildHint(t.name) };
}

/** An official template that is not on disk: `not_built`, or `building` / `error` after a first build began. */
function unbuilt(catalog: TemplateCatalog, recipe: TemplateRecipe): Template {
  const error = catalog.official.lastError(recipe.name);
  const state = catalog.official.isBuilding(recipe.name)
    ? 'building'
    : error
      ? 'error'
      : 'not_built';
  return {
    id: officialId(recipe.name),
    name: recipe.name,
    state,
    description: recipe.description,
    build: buildHint(recipe.name),
    ...(state === 'error' && { error }),
    ...sizing(recipe),
    rootfs_bytes: 0,
    snapshot_bytes: 0,
    built_at: null,
    source: 'builtin',
    env: recipe.env ?? {},
  };
}

/** The templates on disk and every official one, by name. */
async function listAll(catalog: TemplateCatalog): Promise<Template[]> {
  const built = await catalog.list();
  const names = new Set(built.map((t) => t.name));
  const missing = Object.values(BUILTIN_TEMPLATES).filter((r) => !names.has(r.name));
  return [...built.map(toApi), ...missing.map((r) => unbuilt(catalog, r))].sort((a, b) =>
    a.name.localeCompare(b.name),
  );
}

function notFound(name: string): WarrenError {
  return new WarrenError('TEMPLATE_NOT_FOUND', `template ${JSON.stringify(name)} does not exist`);
}

/** Copies an upload to a file, refusing it once it passes the limit. */
async function saveUpload(body: Readable, file: string): Promise<void> {
  let size = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > TEMPLATE_UPLOAD_LIMIT)
        return cb(
          new WarrenError(
            'PAYLOAD_TOO_LARGE',
            `image upload is larger than ${TEMPLATE_UPLOAD_LIMIT} bytes`,
          ),
        );
      cb(null, chunk);
    },
  });
  await pipeline(body, limit, createWriteStream(file, { mode: 0o600 }));
  if (size === 0) throw new WarrenError('INVALID_IMAGE', 'the upload is empty');
}

export function hostTemplateApi(ctx: HostContext, host: BuildHost): HostTemplateApi {
  const builder = new TemplateBuilder(host);
  const catalog = ctx.catalog;
  const fetching = new Map<string, Promise<TemplateRecord>>();
  return {
    list: () => listAll(catalog),
    async get(name) {
      const rec = await catalog.read(name);
      if (rec) return toApi(rec);
      const recipe = officialRecipe(name);
      return recipe ? unbuilt(catalog, recipe) : null;
    },
    async ensure(names, progress) {
      for (const name of await catalog.removeInterrupted())
        progress(`removed template ${name}: its build was interrupted`);
      for (const name of names) await ensureBuiltin(ctx, name, progress);
    },
    build: async (req, progress) => toApi(await builder.build(req, progress)),
    async checkNew(name) {
      if (await catalog.read(name))
        throw new WarrenError('TEMPLATE_EXISTS', `template ${name} already exists`);
      if (officialRecipe(name))
        throw new WarrenError('TEMPLATE_EXISTS', `${name} is the name of an official template`);
    },
    async buildFromImage(name, image, o, progress) {
      const uploads = join(catalog.root, '.uploads');
      await mkdir(uploads, { recursive: true, mode: 0o700 });
      const file = join(uploads, `${randomBytes(8).toString('hex')}.tar`);
      try {
        await saveUpload(image, file);
        const { start, ready, ready_timeout, ...sizing } = o;
        const rec = await builder.build(
          {
            name,
            image: { path: file, uploaded: true },
            ...sizing,
            ...(start?.length && { start }),
            ...(ready?.length && {
              ready: { cmd: ready, ...(ready_timeout && { timeout: ready_timeout }) },
            }),
          },
          progress,
        );
        return toApi(rec);
      } finally {
        await rm(file, { force: true });
      }
    },
    async rebuildReplacesRoot(name) {
      return (await builder.buildSpec(name).catch(() => null)) !== null;
    },
    /**
     * A built-in template is baked again (its root is built first if missing, so
     * this is also how an official template not built at start gets built); a
     * user template repeats its build.
     */
    async rebuild(name, progress) {
      const rec = await catalog.read(name);
      let built: TemplateRecord;
      if (rec && rec.source !== undefined && rec.source !== 'builtin')
        built = await builder.rebuild(rec, progress);
      else if (!officialRecipe(name)) throw notFound(name);
      else built = await ensureBuiltin(ctx, name, progress, { force: true });
      // The previous build's image in the shared store is no longer fetched.
      if (rec?.state === 'ready' && ctx.snapshots.kind === 's3') {
        const old = rec.published ?? sharedImageId(rec);
        if (old !== sharedImageId(built)) await ctx.snapshots.delete(old).catch(() => undefined);
      }
      return toApi(built);
    },
    async remove(name) {
      const rec = await catalog.read(name);
      if (!rec) {
        if (officialRecipe(name))
          throw new WarrenError('TEMPLATE_NOT_BUILT', `official template ${name} is not built`);
        throw notFound(name);
      }
      if (builder.isBuilding(name))
        throw new WarrenError('TEMPLATE_IN_USE', `template ${name} is being built`);
      await catalog.remove(name);
      // Its image in the shared store goes too (the one it came from, or its own build's).
      if (ctx.snapshots.kind === 's3')
        await ctx.snapshots.delete(rec.published ?? sharedImageId(rec)).catch(() => undefined);
    },
    publish: (name) => publishTemplate(ctx, name),
    async fetch(name, imageId, o) {
      // Creates placed here at once wait for one fetch.
      let f = fetching.get(name);
      if (!f) {
        f = fetchTemplate(ctx, name, imageId, o).finally(() => fetching.delete(name));
        fetching.set(name, f);
      }
      return toApi(await f);
    },
  };
}
