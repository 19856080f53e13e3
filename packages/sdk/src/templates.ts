/** Templates are the images sandboxes start from; read-only through the API. */
import type { Template } from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

export async function listTemplates(opts: ConnectionOptions = {}): Promise<Template[]> {
  const res = await new HttpClient(opts).json<{ items: Template[] }>('GET', '/v1/templates');
  return res.items;
}

export function getTemplate(name: string, opts: ConnectionOptions = {}): Promise<Template> {
  return new HttpClient(opts).json('GET', `/v1/templates/${encodeURIComponent(name)}`);
}
