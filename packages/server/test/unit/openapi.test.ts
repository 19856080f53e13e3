import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiDocument } from '../../src/openapi';
import { REPO_ROOT } from '../../src/config';

it('docs/openapi.json is the document the schemas generate (run `npm run openapi`)', async () => {
  const generated = JSON.parse(JSON.stringify(await openApiDocument()));
  const committed = JSON.parse(readFileSync(join(REPO_ROOT, 'docs/openapi.json'), 'utf8'));
  assert.deepEqual(committed, generated);
  assert.ok(generated.paths['/v1/sandboxes/{id}/exec'].post.requestBody);
});
