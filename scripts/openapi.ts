/** Writes docs/openapi.json from the route schemas (`npm run openapi`); a unit test keeps it current. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiDocument } from '../packages/server/src/openapi';
import { REPO_ROOT } from '../packages/server/src/config';

writeFileSync(
  join(REPO_ROOT, 'docs/openapi.json'),
  JSON.stringify(await openApiDocument(), null, 2) + '\n',
);
console.log('wrote docs/openapi.json');
