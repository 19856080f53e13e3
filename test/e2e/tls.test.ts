import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request, type RequestOptions } from 'node:https';
import { startTestPlatform, type TestPlatform } from '../fixture';
import { PREVIEW_APP } from '../preview-app';
import { waitFor } from '../wait';

interface Answer {
  status: number;
  body: string;
}

describe('the API serves TLS itself, from the install CA (WARREN_TLS=auto)', () => {
  let p: TestPlatform;
  let ca: string;
  let port: string;
  let sandbox: string | null = null;

  /** An HTTPS request to the platform; `host` sets the Host header and the TLS server name. */
  const call = (
    path: string,
    o: { method?: string; json?: unknown; host?: string; ca?: string | null } = {},
  ): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const body = o.json === undefined ? undefined : JSON.stringify(o.json);
      const opts: RequestOptions = {
        host: '127.0.0.1',
        port,
        path,
        method: o.method ?? 'GET',
        ca: o.ca === null ? undefined : (o.ca ?? ca),
        servername: o.host?.split(':')[0],
        headers: {
          authorization: `Bearer ${p.adminToken}`,
          ...(o.host ? { host: o.host } : {}),
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
      };
      const req = request(opts, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.once('error', reject);
      req.end(body);
    });

  before(async () => {
    p = await startTestPlatform({
      tls: { kind: 'auto', names: [] },
      previewDomain: 'preview.localhost',
    });
    port = new URL(p.url).port;
    ca = readFileSync(p.dbCaFile, 'utf8');
  });
  after(async () => {
    if (sandbox) await call(`/v1/sandboxes/${sandbox}`, { method: 'DELETE' }).catch(() => 0);
    await p?.stop();
  });

  it('answers over HTTPS to a client trusting the install CA, and only to it', async () => {
    assert.match(p.url, /^https:\/\//);
    const health = await call('/v1/health');
    assert.equal(health.status, 200);
    const list = await call('/v1/sandboxes');
    assert.equal(list.status, 200, list.body);
    // Without the CA the certificate does not verify.
    await assert.rejects(
      call('/v1/health', { ca: null }),
      /self[- ]signed|unable to (get|verify)/i,
    );
  });

  it('plain HTTP is not served on the port', async () => {
    const plain = new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/health' }, (res) =>
        resolve(res.statusCode ?? 0),
      );
      req.once('error', reject);
      req.end();
    });
    await assert.rejects(plain);
  });

  it('a preview URL works over TLS (the wildcard of the preview domain)', async () => {
    const created = await call('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'base', memory_mb: 256 },
    });
    assert.equal(created.status, 201, created.body);
    sandbox = (JSON.parse(created.body) as { id: string }).id;
    const started = await call(`/v1/sandboxes/${sandbox}/processes`, {
      method: 'POST',
      json: { cmd: 'python3', args: ['-c', PREVIEW_APP, '3000'] },
    });
    assert.equal(started.status, 201, started.body);
    const host = `3000-${sandbox}.preview.localhost:${port}`;
    const answer = await waitFor(
      async () => {
        const res = await call('/hello', { host });
        return res.status === 200 ? res : null;
      },
      { what: 'the preview app to answer over TLS', timeoutMs: 20_000, intervalMs: 100 },
    );
    assert.match(answer.body, /hello/i);
  });
});
