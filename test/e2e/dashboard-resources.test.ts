/**
 * The dashboard's pages of templates, databases and usage in a real headless
 * Chromium against a real platform on gVisor: a template built from the form
 * with its log streamed (and a failed step shown with its code), a database
 * created from the form, branched, restored, its password rotated and deleted
 * (each checked with a real PostgreSQL client), and host capacity and usage
 * grouped by organisation, label and template. Screenshots go to docs/screenshots/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Database } from '@warren/protocol';
import { REPO, startTestPlatform, type TestPlatform } from '../fixture';
import { connectError, withClient } from '../databases';
import { waitFor } from '../wait';

const SHOTS = join(REPO, 'docs/screenshots');
const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });

describe('web dashboard: templates, databases and usage', () => {
  let p: TestPlatform;
  let browser: Browser;
  let page: Page;
  const sandboxes: string[] = [];
  const databases: string[] = [];
  const templates: string[] = [];

  before(async () => {
    p = await startTestPlatform({ usageSampleMs: 1000 });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox'],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // Two sandboxes with a label, so usage has something to group.
    for (let i = 0; i < 2; i++) {
      const s = await p.json<{ id: string }>('/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base', memory_mb: 128, metadata: { suite: 'dashboard' } },
      });
      sandboxes.push(s.id);
    }
    await page.goto(`${p.url}/`);
    await page.getByLabel('API key').fill(p.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
  });
  after(async () => {
    await browser?.close();
    for (const id of sandboxes)
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' }).catch(() => null);
    for (const id of databases)
      await p.api(`/v1/databases/${id}`, { method: 'DELETE' }).catch(() => null);
    for (const name of templates)
      await p.api(`/v1/templates/${name}`, { method: 'DELETE' }).catch(() => null);
    await p?.stop();
  });

  it('builds a template from the form with its log streamed, shows a failed step with its code, and deletes it', async () => {
    await page.getByRole('link', { name: 'Templates' }).click();
    await page.getByRole('button', { name: 'Build a template' }).click();
    const form = page.getByRole('form', { name: 'Build a template' });
    const log = page.getByRole('log', { name: 'Build log' });
    await form.getByLabel('Name').fill('dash-fails');
    await form.getByLabel('Steps').fill('echo output-of-step-one\nexit 3');
    await form.getByRole('button', { name: 'Build', exact: true }).click();
    const failed = page.getByRole('alert').filter({ hasText: 'TEMPLATE_BUILD_FAILED' });
    await failed.waitFor({ timeout: 180_000 });
    assert.match((await failed.textContent()) ?? '', /step 2/);
    assert.match((await log.textContent()) ?? '', /output-of-step-one/);
    assert.equal((await p.api('/v1/templates/dash-fails')).status, 404);

    templates.push('dash-built');
    await form.getByLabel('Name').fill('dash-built');
    await form
      .getByLabel('Steps')
      .fill('echo built-by-the-dashboard > /etc/dash-marker\nWORKDIR /srv');
    await form.getByRole('button', { name: 'Build', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'done: dash-built is ready' })
      .waitFor({ timeout: 300_000 });
    assert.match((await log.textContent()) ?? '', /step 1/);
    await page.getByRole('cell', { name: 'dash-built', exact: true }).waitFor();
    await shot(page, 'templates');
    const sbx = await p.json<{ id: string }>('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'dash-built', memory_mb: 128 },
    });
    try {
      const out = await p.json<{ stdout: string }>(`/v1/sandboxes/${sbx.id}/exec`, {
        method: 'POST',
        json: { cmd: 'cat', args: ['/etc/dash-marker'] },
      });
      assert.equal(out.stdout.trim(), 'built-by-the-dashboard');
    } finally {
      await p.api(`/v1/sandboxes/${sbx.id}`, { method: 'DELETE' });
    }
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete dash-built' }).click();
    await waitFor(async () => (await p.api('/v1/templates/dash-built')).status === 404, {
      what: 'the template to be deleted',
      timeoutMs: 60_000,
    });
  });

  it('creates a database from the form, branches and restores it, rotates its password and deletes it', async () => {
    await page.getByRole('link', { name: 'Databases' }).click();
    await page.getByRole('button', { name: 'New database' }).click();
    const form = page.getByRole('form', { name: 'Create a database' });
    await form.getByLabel('Label').fill('dash-db');
    await form.getByLabel('Memory (MiB)').fill('256');
    await form.getByRole('button', { name: 'Create database' }).click();
    await page.waitForURL(/\/databases\/db_[a-z0-9]+$/, { timeout: 120_000 });
    const id = /db_[a-z0-9]+/.exec(page.url())![0];
    databases.push(id);
    const shown = (term: string) => page.locator(`dt:text-is("${term}") + dd code`).first();
    const url = (await shown('Direct').textContent()) ?? '';
    await withClient(p, url, async (c) => {
      await c.query('CREATE TABLE notes (t text)');
      await c.query("INSERT INTO notes VALUES ('written-before-the-branch')");
    });

    await page.getByLabel('Branch label').fill('dash-branch');
    await page.getByRole('button', { name: 'Branch', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'Branch ready:' })
      .waitFor({ timeout: 120_000 });
    await page.getByLabel('Restore label').fill('dash-restore');
    await page.getByRole('button', { name: 'Restore', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'Restore ready:' })
      .waitFor({ timeout: 180_000 });
    const all = (await p.json<{ items: Database[] }>('/v1/databases')).items;
    const children = all.filter((d) => d.parent_id === id);
    databases.push(...children.map((d) => d.id));
    assert.deepEqual(children.map((d) => d.label).sort(), ['dash-branch', 'dash-restore']);
    for (const child of children)
      assert.equal(
        await withClient(
          p,
          child.connection_url,
          async (c) => (await c.query('SELECT t FROM notes')).rows[0].t,
        ),
        'written-before-the-branch',
      );
    const list = page.getByRole('list', { name: 'Branches and restores' });
    await list.getByRole('link', { name: 'dash-branch' }).waitFor({ timeout: 30_000 });
    await list.getByRole('link', { name: 'dash-restore' }).waitFor();
    // The restore switched and archived the WAL file: the archive status says so.
    await page
      .getByLabel('Archive status')
      .getByText(/^last WAL .* ago/)
      .waitFor({ timeout: 30_000 });

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Rotate password' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'New password set' })
      .waitFor({ timeout: 60_000 });
    const rotated = await p.json<Database>(`/v1/databases/${id}`);
    assert.notEqual(rotated.connection_url, url);
    await waitFor(async () => (await shown('Direct').textContent()) === rotated.connection_url, {
      what: 'the new connection string on the page',
      timeoutMs: 10_000,
    });
    assert.equal(await connectError(p, url), '28P01');
    await page.getByRole('heading', { name: 'Events' }).scrollIntoViewIfNeeded();
    await page
      .getByLabel('Database events')
      .getByText('password')
      .first()
      .waitFor({ timeout: 30_000 });
    await shot(page, 'database');

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete database' }).click();
    await page.waitForURL(/\/databases$/, { timeout: 60_000 });
    assert.equal((await p.api(`/v1/databases/${id}`)).status, 404);
  });

  it('shows host capacity, and usage grouped by organisation, template and label', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    await page
      .getByRole('article', { name: /^Host / })
      .getByText(/Memory reserved: \d+ of \d+ MiB/)
      .waitFor({ timeout: 30_000 });
    const table = page.getByRole('table', { name: 'Usage by group' });
    await table
      .getByRole('cell', { name: 'org_default', exact: true })
      .waitFor({ timeout: 30_000 });
    await page.getByLabel('Group by').selectOption('label');
    await page.getByLabel('Label key').fill('suite');
    await table.getByRole('cell', { name: 'dashboard', exact: true }).waitFor({ timeout: 30_000 });
    const report = await p.json<{ groups: { key: string | null; sandboxes: number }[] }>(
      '/v1/usage?group_by=label:suite',
    );
    const group = report.groups.find((g) => g.key === 'dashboard');
    assert.ok(group && group.sandboxes >= 2, JSON.stringify(report.groups));
    const row = table
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: 'dashboard', exact: true }) });
    assert.equal(
      (await row.getByRole('cell').nth(1).textContent())?.trim(),
      String(group.sandboxes),
    );
    await page.getByLabel('Group by').selectOption('template');
    await table.getByRole('cell', { name: 'base', exact: true }).waitFor({ timeout: 30_000 });
    await shot(page, 'usage');
  });
});
