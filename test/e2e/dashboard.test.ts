/**
 * The web dashboard in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core) against a real platform on gVisor: sign-in, create from the
 * form, a terminal on the PTY WebSocket, upload and download, fork and lineage,
 * delete, sign-out, a wrong key, a revoked key, an API error, a sandbox's metrics
 * charts; and how the control
 * plane serves the app (cache headers, the SPA fallback that leaves /v1 and /mcp
 * alone). Screenshots of the main pages go to docs/screenshots/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

const SHOTS = join(REPO, 'docs/screenshots');
const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });

describe('web dashboard', () => {
  let p: TestPlatform;
  let browser: Browser;
  let page: Page;
  const made: string[] = [];

  before(async () => {
    p = await startTestPlatform({ usageSampleMs: 1000 });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox'],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  });
  after(async () => {
    await browser?.close();
    for (const id of made)
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' }).catch(() => null);
    await p?.stop();
  });

  async function signIn(key: string) {
    await page.goto(`${p.url}/`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('is served at / with revalidated index.html, immutable assets and a fallback that leaves the API alone', async () => {
    const index = await fetch(`${p.url}/`);
    assert.equal(index.status, 200);
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    const html = await index.text();
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(asset, html);
    const js = await fetch(p.url + asset);
    assert.equal(js.status, 200);
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const client = await fetch(`${p.url}/sandboxes/sbx_0123456789abcdef/files`);
    assert.equal(client.status, 200);
    assert.equal(await client.text(), html);
    const api = await p.api('/v1/no-such-route');
    assert.equal(api.status, 404);
    assert.equal(((await api.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
    const mcp = await fetch(`${p.url}/mcp`);
    assert.equal(mcp.status, 401);
    const missing = await fetch(`${p.url}/assets/none.js`);
    assert.equal(missing.status, 404);
  });

  it('refuses a wrong key with its code', async () => {
    await signIn('wrn_not_a_real_key');
    await page.getByRole('alert').getByText('UNAUTHORIZED').waitFor();
    await shot(page, 'sign-in');
  });

  it('signs in, creates a sandbox from the form, and lists it', async () => {
    await signIn(p.adminToken);
    await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
    await page.getByRole('button', { name: 'New sandbox' }).click();
    const form = page.getByRole('form', { name: 'Create a sandbox' });
    await form.getByLabel('Memory (MiB)').fill('256');
    await form.getByLabel('TTL (seconds)').fill('900');
    await form.getByLabel('Labels').fill('suite=dashboard');
    await form.getByRole('button', { name: 'Create sandbox' }).click();
    await page.waitForURL(/\/sandboxes\/sbx_[a-z0-9]+$/, { timeout: 120_000 });
    const id = /sbx_[a-z0-9]+/.exec(page.url())![0];
    made.push(id);
    const sbx = await p.json<{
      memory_mb: number;
      metadata: Record<string, string>;
      ttl_seconds: number;
    }>(`/v1/sandboxes/${id}`);
    assert.equal(sbx.memory_mb, 256);
    assert.equal(sbx.ttl_seconds, 900);
    assert.deepEqual(sbx.metadata, { suite: 'dashboard' });
  });

  it('runs echo hi in the terminal', async () => {
    const status = page.getByTestId('terminal-status');
    await waitFor(async () => (await status.textContent())?.trim() === 'connected', {
      what: 'the terminal to connect',
      timeoutMs: 60_000,
    });
    await page.locator('.xterm').click();
    await page.keyboard.type('echo hi');
    await page.keyboard.press('Enter');
    await waitFor(
      async () =>
        (await page.locator('.xterm-rows > div').allTextContents()).some((l) => l.trim() === 'hi'),
      { what: 'a line "hi" on the terminal', timeoutMs: 30_000 },
    );
    await shot(page, 'terminal');
  });

  it('reconnects the terminal after a snapshot closes it, without drawing the output twice', async () => {
    await page
      .getByRole('toolbar', { name: 'Sandbox actions' })
      .getByRole('button', { name: 'Snapshot' })
      .click();
    await page
      .getByRole('status')
      .filter({ hasText: /Snapshot snap_\w+ taken/ })
      .waitFor({ timeout: 120_000 });
    const status = page.getByTestId('terminal-status');
    await waitFor(
      async () =>
        Number(await status.getAttribute('data-attachments')) >= 2 &&
        (await status.textContent())?.trim() === 'connected',
      { what: 'the terminal to attach again', timeoutMs: 60_000 },
    );
    await page.locator('.xterm').click();
    await page.keyboard.type('echo again');
    await page.keyboard.press('Enter');
    const lines = () => page.locator('.xterm-rows > div').allTextContents();
    await waitFor(async () => (await lines()).some((l) => l.trim() === 'again'), {
      what: 'a line "again" on the terminal',
      timeoutMs: 30_000,
    });
    assert.equal((await lines()).filter((l) => l.trim() === 'hi').length, 1);
  });

  it('leaves a paused sandbox paused, and attaches again once it is resumed', async () => {
    const toolbar = page.getByRole('toolbar', { name: 'Sandbox actions' });
    const status = page.getByTestId('terminal-status');
    const before = Number(await status.getAttribute('data-attachments'));
    await toolbar.getByRole('button', { name: 'Pause' }).click();
    await status.filter({ hasText: 'sandbox paused' }).waitFor({ timeout: 60_000 });
    const id = /sbx_[a-z0-9]+/.exec(page.url())![0];
    assert.equal((await p.json<{ state: string }>(`/v1/sandboxes/${id}`)).state, 'paused');
    await toolbar.getByRole('button', { name: 'Resume' }).click();
    await waitFor(
      async () =>
        Number(await status.getAttribute('data-attachments')) > before &&
        (await status.textContent())?.trim() === 'connected',
      { what: 'the terminal to attach after the resume', timeoutMs: 60_000 },
    );
  });

  it('uploads a file, lists it, and downloads it byte for byte', async () => {
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7 + 3) % 256));
    await page.getByRole('link', { name: 'Files' }).click();
    await page
      .getByLabel('Upload files')
      .setInputFiles({ name: 'blob.bin', mimeType: 'application/octet-stream', buffer: bytes });
    const row = page.locator('tr[data-name="blob.bin"]');
    await row.waitFor({ timeout: 30_000 });
    const pending = page.waitForEvent('download');
    await row.getByRole('button', { name: 'Download blob.bin' }).click();
    const download = await pending;
    const path = await download.path();
    assert.ok(Buffer.from(await readFile(path)).equals(bytes), 'downloaded bytes differ');
    await shot(page, 'files');
  });

  it('forks the sandbox and shows the child in the lineage tree', async () => {
    const parent = /sbx_[a-z0-9]+/.exec(page.url())![0];
    await page
      .getByRole('toolbar', { name: 'Sandbox actions' })
      .getByRole('button', { name: 'Fork' })
      .click();
    const notice = page.getByRole('status').filter({ hasText: 'Forked:' });
    await notice.waitFor({ timeout: 120_000 });
    const child = /sbx_[a-z0-9]+/.exec((await notice.textContent()) ?? '')![0];
    made.push(child);
    const tree = page.getByLabel('Lineage');
    await tree
      .locator(`li[data-node="${parent}"] li[data-node="${child}"]`)
      .waitFor({ timeout: 30_000 });
    await shot(page, 'lineage');
  });

  it("draws the sandbox's usage charts from its sampled metrics", async () => {
    const id = /sbx_[a-z0-9]+/.exec(page.url())![0];
    await page.goto(`${p.url}/sandboxes/${id}/metrics`);
    await page.getByRole('img', { name: 'CPU (% of one CPU) chart' }).waitFor({ timeout: 30_000 });
    await page.getByRole('img', { name: 'Memory and disk chart' }).locator('canvas').waitFor();
    const totals = page.getByLabel('Usage totals');
    const live = Number.parseFloat(
      (await totals.locator('dt:text-is("Live") + dd').textContent()) ?? '',
    );
    assert.ok(live > 0, `live seconds shown: ${live}`);
    const api = await p.json<{ samples: unknown[]; totals: { sandbox_seconds: number } }>(
      `/v1/sandboxes/${id}/metrics`,
    );
    assert.ok(api.samples.length > 0);
    assert.ok(api.totals.sandbox_seconds >= live - 1, `${api.totals.sandbox_seconds} vs ${live}`);
    await shot(page, 'metrics');
  });

  it('deletes the sandboxes from the list (bulk) and shows the list at phone width', async () => {
    await page.getByRole('link', { name: 'Sandboxes' }).first().click();
    for (const id of made) await page.getByLabel(`Select ${id}`).check({ timeout: 30_000 });
    await shot(page, 'sandboxes');
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, 'sandboxes-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: /Delete selected/ }).click();
    for (const id of made)
      await waitFor(
        async () => (await p.json<{ state: string }>(`/v1/sandboxes/${id}`)).state === 'stopped',
        {
          what: `${id} to stop`,
          timeoutMs: 60_000,
        },
      );
    await page.locator('tr[data-id]').first().waitFor({ state: 'detached', timeout: 30_000 });
  });

  it('shows an API failure with its code', async () => {
    await page.goto(`${p.url}/sandboxes/sbx_0000000000000000`);
    await page.getByRole('alert').getByText('SANDBOX_NOT_FOUND').waitFor();
  });

  it('signs out, and a revoked key sends the user back to sign-in with a message', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('warren.key')"), null);
    const key = await p.json<{ id: string; key: string }>('/v1/keys', {
      method: 'POST',
      json: { name: 'dashboard-test', scopes: ['sandboxes:read'] },
    });
    await signIn(key.key);
    await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
    await p.json(`/v1/keys/${key.id}`, { method: 'DELETE' }).catch(() => null);
    await page.getByText(/Your key was refused \(UNAUTHORIZED/).waitFor({ timeout: 30_000 });
    assert.match(page.url(), /\/sign-in$/);
  });
});
