/**
 * Reads a container image from disk: an OCI image layout (directory or tar)
 * or a `docker save` archive (directory or tar). Gives the layer files in
 * order and the image's defaults (user, env, workdir, entrypoint, cmd).
 * A registry pull can later produce the same `OpenedImage`.
 */
import { createReadStream } from 'node:fs';
import { mkdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { WarrenError } from '@warren/protocol';
import { applyLayer, applyLayerFile } from './layer-extract';

export interface ImageDefaults {
  env: Record<string, string>;
  workdir: string | null;
  user: string | null;
  /** Entrypoint followed by cmd: the image's own start command. */
  start: string[] | null;
}

export interface ImageLayerFile {
  path: string;
  /** `sha256:<hex>` of the file, when the image names it (OCI layouts do). */
  digest: string | null;
}

export interface OpenedImage {
  format: 'oci' | 'docker';
  layers: ImageLayerFile[];
  defaults: ImageDefaults;
}

const DIGEST = /^sha256:([a-f0-9]{64})$/;
const MAX_JSON = 4 * 1024 * 1024;

function bad(message: string): WarrenError {
  return new WarrenError('INVALID_IMAGE', message);
}

async function readJson<T>(file: string, what: string): Promise<T> {
  const st = await stat(file).catch(() => null);
  if (!st?.isFile()) throw bad(`${what} is missing from the image`);
  if (st.size > MAX_JSON) throw bad(`${what} is too large`);
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    throw bad(`${what} is not valid JSON`);
  }
}

/** A path named inside the image, resolved with symlinks and kept inside the image directory. */
async function inside(dir: string, rel: unknown, what: string): Promise<string> {
  if (typeof rel !== 'string' || rel === '') throw bad(`${what}: missing path`);
  const root = await realpath(dir);
  const real = await realpath(join(root, rel)).catch(() => null);
  if (!real) throw bad(`${what} ${JSON.stringify(rel)} is missing from the image`);
  if (real !== root && !real.startsWith(root + sep))
    throw bad(`${what} ${JSON.stringify(rel)} points outside the image`);
  return real;
}

interface Descriptor {
  mediaType?: string;
  digest?: string;
  size?: number;
  platform?: { architecture?: string; os?: string };
}

function blobPath(dir: string, d: Descriptor | undefined, what: string): string {
  const m = DIGEST.exec(String(d?.digest ?? ''));
  if (!m?.[1]) throw bad(`${what} has no valid sha256 digest`);
  return join(dir, 'blobs', 'sha256', m[1]);
}

const INDEX_TYPES = new Set([
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
]);

function pickManifest(manifests: Descriptor[] | undefined): Descriptor {
  if (!Array.isArray(manifests) || manifests.length === 0)
    throw bad('image index has no manifests');
  const amd64 = manifests.find(
    (m) => m.platform?.architecture === 'amd64' && (m.platform.os ?? 'linux') === 'linux',
  );
  return amd64 ?? (manifests[0] as Descriptor);
}

async function openOci(dir: string): Promise<OpenedImage> {
  let desc = pickManifest(
    (await readJson<{ manifests?: Descriptor[] }>(join(dir, 'index.json'), 'index.json')).manifests,
  );
  for (let depth = 0; INDEX_TYPES.has(desc.mediaType ?? ''); depth++) {
    if (depth > 4) throw bad('image indexes nest too deeply');
    const idx = await readJson<{ manifests?: Descriptor[] }>(
      blobPath(dir, desc, 'index'),
      'index blob',
    );
    desc = pickManifest(idx.manifests);
  }
  const manifest = await readJson<{ config?: Descriptor; layers?: Descriptor[] }>(
    blobPath(dir, desc, 'manifest'),
    'image manifest',
  );
  if (!Array.isArray(manifest.layers)) throw bad('image manifest lists no layers');
  const config = await readJson<{ config?: RawConfig }>(
    blobPath(dir, manifest.config, 'image config'),
    'image config',
  );
  const layers = manifest.layers.map((l, i) => {
    if (/zstd/.test(l.mediaType ?? ''))
      throw bad(`layer ${i + 1} is zstd-compressed; use gzip or plain tar`);
    return { path: blobPath(dir, l, `layer ${i + 1}`), digest: String(l.digest) };
  });
  return { format: 'oci', layers, defaults: defaultsOf(config.config) };
}

async function openDocker(dir: string): Promise<OpenedImage> {
  const list = await readJson<Array<{ Config?: string; Layers?: string[] }>>(
    join(dir, 'manifest.json'),
    'manifest.json',
  );
  const first = Array.isArray(list) ? list[0] : undefined;
  if (!first || !Array.isArray(first.Layers)) throw bad('manifest.json names no image');
  const config = await readJson<{ config?: RawConfig }>(
    await inside(dir, first.Config, 'image config'),
    'image config',
  );
  const layers: ImageLayerFile[] = [];
  for (const [i, l] of first.Layers.entries()) {
    layers.push({ path: await inside(dir, l, `layer ${i + 1}`), digest: null });
  }
  return { format: 'docker', layers, defaults: defaultsOf(config.config) };
}

interface RawConfig {
  Env?: unknown;
  WorkingDir?: unknown;
  User?: unknown;
  Entrypoint?: unknown;
  Cmd?: unknown;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function defaultsOf(c: RawConfig | undefined): ImageDefaults {
  const env: Record<string, string> = {};
  for (const kv of strings(c?.Env)) {
    const eq = kv.indexOf('=');
    if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const start = [...strings(c?.Entrypoint), ...strings(c?.Cmd)];
  return {
    env,
    workdir: typeof c?.WorkingDir === 'string' && c.WorkingDir ? c.WorkingDir : null,
    user: typeof c?.User === 'string' && c.User ? c.User : null,
    start: start.length ? start : null,
  };
}

/**
 * Opens an image at `source` (a directory, or a tar of one, possibly gzipped).
 * A tar is unpacked into `scratch` first, with the same safe extraction as layers.
 */
export async function openImage(source: string, scratch: string): Promise<OpenedImage> {
  const st = await stat(source).catch(() => null);
  if (!st) throw bad(`image ${source} does not exist`);
  let dir = source;
  if (!st.isDirectory()) {
    await mkdir(scratch, { recursive: true });
    await applyLayerFile(scratch, source).catch((err: unknown) => {
      throw err instanceof WarrenError ? bad(`image archive: ${err.message}`) : err;
    });
    dir = scratch;
  }
  const has = (name: string) =>
    stat(join(dir, name)).then(
      (s) => s.isFile(),
      () => false,
    );
  if (await has('index.json')) return openOci(dir);
  if (await has('manifest.json')) return openDocker(dir);
  throw bad('not an image: neither index.json (OCI layout) nor manifest.json (docker save) found');
}

/** Applies every layer of an opened image to `rootfs`, in order; checks OCI digests. */
export async function unpackImage(
  image: OpenedImage,
  rootfs: string,
  progress: (line: string) => void,
): Promise<Array<{ digest: string; size: number }>> {
  const out: Array<{ digest: string; size: number }> = [];
  for (const [i, layer] of image.layers.entries()) {
    const stats = await applyLayer(rootfs, createReadStream(layer.path));
    if (layer.digest && layer.digest !== stats.digest)
      throw bad(`layer ${i + 1} does not match its digest ${layer.digest}`);
    progress(
      `layer ${i + 1}/${image.layers.length} ${stats.digest.slice(0, 19)}: ${stats.entries} entries, ${stats.bytes} bytes`,
    );
    out.push({ digest: stats.digest, size: stats.size });
  }
  return out;
}
