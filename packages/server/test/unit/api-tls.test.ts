import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { issueServerCertificate } from '../../src/databases/front-door/tls';
import { autoNames, loadApiTls } from '../../src/tls';

describe('API TLS configuration', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wtls-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads WARREN_TLS* from the environment', () => {
    const base = { WARREN_HOME: dir };
    assert.equal(loadConfig(base).tls, null);
    assert.deepEqual(
      loadConfig({ ...base, WARREN_TLS: 'auto', WARREN_TLS_NAMES: 'a.example,IP:10.0.0.1' }).tls,
      {
        kind: 'auto',
        names: ['a.example', 'IP:10.0.0.1'],
      },
    );
    assert.throws(() => loadConfig({ ...base, WARREN_TLS_CERT: '/c.pem' }), /go together/);
    assert.throws(() => loadConfig({ ...base, WARREN_TLS: 'yes' }), /auto or off/);
  });

  it('auto names cover loopback, the host and the preview wildcard (two labels only)', () => {
    const config = loadConfig({ WARREN_HOME: dir, WARREN_HOST: '10.1.2.3' });
    assert.deepEqual(autoNames(config, ['x.example']), [
      'localhost',
      '127.0.0.1',
      '::1',
      'x.example',
      '10.1.2.3',
    ]);
    config.previewDomain = 'preview.example.com';
    assert.ok(autoNames(config, []).includes('*.preview.example.com'));
  });

  it('serves certificate files as given, and issues the auto one from the install CA', async () => {
    const issued = await issueServerCertificate(dir, ['localhost', '127.0.0.1'], 'api');
    const cert = new X509Certificate(issued.cert);
    assert.ok(cert.checkIssued(new X509Certificate(issued.caPem)));
    assert.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    // Issued again with the same names: the same certificate, not a new one.
    assert.equal(
      (await issueServerCertificate(dir, ['127.0.0.1', 'localhost'], 'api')).cert,
      issued.cert,
    );
    writeFileSync(join(dir, 'c.pem'), issued.cert);
    writeFileSync(join(dir, 'k.pem'), issued.key);
    const config = loadConfig({
      WARREN_HOME: dir,
      WARREN_TLS_CERT: join(dir, 'c.pem'),
      WARREN_TLS_KEY: join(dir, 'k.pem'),
    });
    assert.deepEqual(await loadApiTls(config), { cert: issued.cert, key: issued.key });
  });
});
