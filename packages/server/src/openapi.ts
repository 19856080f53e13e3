/** The OpenAPI document, generated from the route schemas without starting a platform. */
import { buildApp } from './app';
import type { AppContext } from './context';
import { VERSION } from './platform';

export async function openApiDocument(): Promise<unknown> {
  // Route handlers never run here; only their schemas are read.
  const app = await buildApp({ version: VERSION } as AppContext, false);
  await app.ready();
  const doc = app.swagger();
  await app.close();
  return doc;
}
