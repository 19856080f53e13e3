/**
 * Container images made by the tests themselves (no registry is reachable):
 * layer tars written entry by entry with tar-stream, wrapped as an OCI image
 * layout or as a `docker save` archive.
 */
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack, type Header } from 'tar-stream';

export interface Entry {
  name: string;
  type?: Header['type'];
  content?: string | Buffer;
  linkname?: string;
  mode?: number;
}

/** A tar with exactly these entries, in this order (names are not checked: tests need bad ones). */
export async function tarOf(entries: Entry[]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  p.on('data', (c) => void chunks.push(c as Buffer));
  const done = new Promise<void>((resolve, reject) => {
    p.on('end', resolve);
    p.on('error', reject);
  });
  for (const e of entries) {
    const type = e.type ?? (e.content !== undefined ? 'file' : 'directory');
    const body = e.content !== undefined ? Buffer.from(e.content) : undefined;
    p.entry(
      {
        name: e.name,
        type,
        linkname: e.linkname,
        mode: e.mode ?? (type === 'directory' ? 0o755 : 0o644),
        size: body?.length ?? 0,
        mtime: new Date(1_700_000_000_000),
      },
      body ?? '',
    );
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

/**
 * A layer holding a whole directory tree (GNU tar, numeric owners kept).
 * Exit status 1 is "file changed as we read it": a test elsewhere hard-linking
 * the same template root changes only the files' ctime, and the archive is whole.
 */
export function tarOfDir(dir: string, out: string): string {
  const r = spawnSync(
    'tar',
    ['-C', dir, '--numeric-owner', '--warning=no-file-changed', '-cf', out, '.'],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0 && r.status !== 1)
    throw new Error(`tar of ${dir} failed (${r.status}): ${r.stderr}`);
  return out;
}

export interface ImageConfig {
  Env?: string[];
  WorkingDir?: string;
  User?: string;
  Entrypoint?: string[];
  Cmd?: string[];
}

function sha(buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex');
}

/**
 * Writes an OCI image layout into `dir` (layers may be Buffers or paths of
 * tar files; `gzip` compresses the Buffers) and returns it.
 */
export function ociLayout(
  dir: string,
  layers: Array<Buffer | string>,
  config: ImageConfig,
  opts: { gzip?: boolean } = {},
): string {
  mkdirSync(join(dir, 'blobs/sha256'), { recursive: true });
  const blob = (buf: Buffer): { digest: string; size: number } => {
    const hex = sha(buf);
    writeFileSync(join(dir, 'blobs/sha256', hex), buf);
    return { digest: `sha256:${hex}`, size: buf.length };
  };
  const layerDescs = layers.map((l) => {
    const raw = typeof l === 'string' ? readFileSync(l) : l;
    const gz = opts.gzip && typeof l !== 'string';
    return {
      mediaType: gz
        ? 'application/vnd.oci.image.layer.v1.tar+gzip'
        : 'application/vnd.oci.image.layer.v1.tar',
      ...blob(gz ? gzipSync(raw) : raw),
    };
  });
  const cfg = blob(
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config,
        rootfs: { type: 'layers', diff_ids: [] },
      }),
    ),
  );
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...cfg },
        layers: layerDescs,
      }),
    ),
  );
  writeFileSync(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    join(dir, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest }],
    }),
  );
  return dir;
}

/** Writes a `docker save`-style archive tree (manifest.json, <id>/layer.tar) into `dir`. */
export function dockerSave(dir: string, layers: Buffer[], config: ImageConfig): string {
  mkdirSync(dir, { recursive: true });
  const paths = layers.map((l, i) => {
    mkdirSync(join(dir, `l${i}`), { recursive: true });
    writeFileSync(join(dir, `l${i}/layer.tar`), l);
    return `l${i}/layer.tar`;
  });
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ config }));
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify([{ Config: 'config.json', RepoTags: ['test:latest'], Layers: paths }]),
  );
  return dir;
}

/** Packs an image directory (OCI layout or docker save tree) into one tar file. */
export function tarImage(dir: string, out: string): string {
  execFileSync('tar', ['-C', dir, '-cf', out, '.']);
  return out;
}
