/**
 * The guest bundle: the guest agent (bundled into one file), its native
 * spawner and relay helpers (static binaries, so any libc will do), the
 * handoff library a database's PostgreSQL is started with, plus a private
 * copy of this host's Node.js binary, its shared libraries and its dynamic
 * loader. It is mounted read-only at /opt/warren and started through its own
 * loader, so it runs in any image whatever that image's libc is.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync, realpathSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const AGENT_ENTRY = fileURLToPath(new URL('../../../guest-agent/src/main.ts', import.meta.url));
/** The helper that spawns user processes for the agent (see guest-agent/src/spawner.ts). */
const SPAWNER_SOURCE = fileURLToPath(
  new URL('../../../guest-agent/native/spawner.c', import.meta.url),
);
/** The helper that moves bulk bytes to the host for the agent (see guest-agent/src/relay.ts). */
const RELAY_SOURCE = fileURLToPath(new URL('../../../guest-agent/native/relay.c', import.meta.url));
/** The library a server takes host connections by descriptor with (see native/handoff.c). */
const HANDOFF_SOURCE = fileURLToPath(
  new URL('../../../guest-agent/native/handoff.c', import.meta.url),
);

/** The code interpreter's driver and its contexts (guest-agent/code), copied to <bundle>/code. */
const CODE_DIR = fileURLToPath(new URL('../../../guest-agent/code/', import.meta.url));
const CODE_FILES = ['driver.py', 'js-context.mjs', 'bash-context.sh'];

async function bundleAgent(): Promise<string> {
  const result = await build({
    entryPoints: [AGENT_ENTRY],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    write: false,
    minify: false,
    legalComments: 'none',
  });
  const file = result.outputFiles[0];
  if (!file) throw new Error('esbuild produced no guest agent bundle');
  return file.text;
}

/** Shared libraries of a binary as ldd reports them, plus the dynamic loader. */
function sharedLibraries(binary: string): string[] {
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (m?.[1]) libs.push(m[1]);
  }
  return libs;
}

export interface GuestBundle {
  dir: string;
  /** Changes whenever the agent code or the runtime changes; template snapshots record it. */
  key: string;
}

export async function ensureGuestBundle(root: string): Promise<GuestBundle> {
  const agent = await bundleAgent();
  const spawnerSource = await readFile(SPAWNER_SOURCE);
  const relaySource = await readFile(RELAY_SOURCE);
  const handoffSource = await readFile(HANDOFF_SOURCE);
  const codeHash = createHash('sha256');
  for (const f of CODE_FILES) codeHash.update(await readFile(join(CODE_DIR, f)));
  const node = realpathSync(process.execPath);
  const nodeStat = await stat(node);
  const key = createHash('sha256')
    .update(agent)
    .update(createHash('sha256').update(spawnerSource).digest('hex'))
    .update(createHash('sha256').update(relaySource).digest('hex'))
    .update(createHash('sha256').update(handoffSource).digest('hex'))
    .update(codeHash.digest('hex'))
    .update(`${process.version}:${nodeStat.size}:${nodeStat.mtimeMs}`)
    .digest('hex')
    .slice(0, 16);
  const dir = join(root, key);
  if (existsSync(join(dir, 'agent.js'))) return { dir, key };

  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(join(tmp, 'lib'), { recursive: true });
  await copyFile(node, join(tmp, 'node'));
  for (const lib of sharedLibraries(node)) {
    // The loader must be reachable under its usual name for `ld-linux-x86-64.so.2 --library-path`.
    await copyFile(realpathSync(lib), join(tmp, 'lib', basename(lib)));
  }
  // The helpers are static, so they run in the sandbox image whatever its libc
  // (musl-based Alpine too). The handoff library is loaded into a server of the
  // image (PostgreSQL), so it uses the image's C library: built against this
  // host's, it needs only symbols every glibc has.
  for (const [name, source, before, after] of [
    ['spawner', SPAWNER_SOURCE, ['-static'], []],
    ['relay', RELAY_SOURCE, ['-static', '-pthread'], []],
    ['handoff.so', HANDOFF_SOURCE, ['-shared', '-fPIC'], ['-ldl']],
  ] as const) {
    execFileSync(
      'gcc',
      [...before, '-O2', '-Wall', '-Wextra', '-Werror', '-o', join(tmp, name), source, ...after],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  await mkdir(join(tmp, 'code'));
  for (const f of CODE_FILES) await copyFile(join(CODE_DIR, f), join(tmp, 'code', f));
  await writeFile(join(tmp, 'agent.js'), agent);
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
  return { dir, key };
}
