/**
 * A platform on the FAKE driver (guest agents as plain host processes) for unit
 * tests of the control plane's lifecycle logic: a hand-written template, a
 * memory budget of 1000 MiB, and sweeps only when a test asks for one.
 */
import { after, before } from 'node:test';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startPlatform, type Platform, type StartOptions } from '../../src/index';
import type { FakeDriver } from '../../../host-agent/src/runtime/fake/driver';

export type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export const TEMPLATE = 'fake';
let templatesDir = '';

/** A template record written by hand (see TemplateCatalog.read): the fake driver ignores its dirs. */
function writeTemplate(dir: string): void {
  const tdir = join(dir, TEMPLATE);
  mkdirSync(join(tdir, 'rootfs'), { recursive: true });
  mkdirSync(join(tdir, 'snapshot'), { recursive: true });
  const record = {
    id: 'tpl_fake000000000000',
    name: TEMPLATE,
    state: 'ready',
    default_cpu: 1,
    default_memory_mb: 128,
    max_cpu: 2,
    max_memory_mb: 1024,
    rootfs_bytes: 0,
    snapshot_bytes: 0,
    built_at: new Date().toISOString(),
    rootfs: join(tdir, 'rootfs'),
    snapshot: join(tdir, 'snapshot'),
    guest_key: 'fake',
    runtime_version: 'fake fake-1',
  };
  writeFileSync(join(tdir, 'template.json'), JSON.stringify(record, null, 2));
}

/**
 * Registers the file-level hooks that make the fake template's directory (it
 * also holds the guest bundle the host agent builds on first use) and remove it.
 */
export function useFakeTemplates(): void {
  before(() => {
    templatesDir = mkdtempSync('/tmp/wlt-');
    writeTemplate(templatesDir);
  });
  after(() => {
    rmSync(templatesDir, { recursive: true, force: true });
  });
}

export interface Fx {
  p: Platform;
  home: string;
  driver: FakeDriver;
  api(path: string, init?: { method?: string; json?: unknown }): Promise<Response>;
  json(path: string, init?: { method?: string; json?: unknown }): Promise<Json>;
  create(body?: Record<string, unknown>): Promise<Json>;
  reservedMb(): Promise<number>;
  rowIds(): Promise<string[]>;
  dirs(): string[];
}

export async function start(home: string, overrides: Partial<StartOptions> = {}): Promise<Fx> {
  const p = await startPlatform({
    home,
    host: '127.0.0.1',
    port: 0,
    driver: 'fake',
    templates: [],
    templatesDir,
    memoryBudgetMb: 1000,
    // No overcommit: memory_mb is admitted against the budget as it is.
    memoryOvercommit: 1,
    // Sweeps happen when a test calls sweep(), never behind its back.
    sweepIntervalMs: 3_600_000,
    readyTimeoutMs: 15_000,
    logger: false,
    destroyOnClose: true,
    onProgress: () => undefined,
    // A free port for the database front door: files run side by side.
    dbPort: 0,
    ...overrides,
  });
  const api: Fx['api'] = (path, init = {}) =>
    fetch(p.url + path, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${p.adminToken}`,
        ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
  const json: Fx['json'] = async (path, init) => {
    const res = await api(path, init);
    const body = (await res.json()) as Json;
    if (!res.ok)
      throw new Error(`${init?.method ?? 'GET'} ${path} -> ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  return {
    p,
    home,
    driver: p.host.driver as FakeDriver,
    api,
    json,
    create: (body = {}) =>
      json('/v1/sandboxes', { method: 'POST', json: { template: TEMPLATE, ...body } }),
    reservedMb: async () => (await json('/v1/health')).hosts[0].memory_reserved_mb as number,
    rowIds: async () =>
      (await p.context.store.db.selectFrom('sandboxes').select('id').execute()).map((r) => r.id),
    dirs: () => readdirSync(join(home, 'sandboxes')).sort(),
  };
}

export async function errorOf(
  res: Response,
): Promise<{ status: number; code: string; message: string; details: Json }> {
  const body = (await res.json()) as {
    error: { code: string; message: string; details?: unknown };
  };
  return {
    status: res.status,
    code: body.error.code,
    message: body.error.message,
    details: body.error.details,
  };
}
