/**
 * Templates are the images sandboxes start from: list and inspect them, build
 * them from recipes or container images (the build log streams to `onLog`),
 * build them again, and delete them.
 */
import {
  WarrenError,
  isErrorCode,
  type Template,
  type TemplateBuildEvent,
  type TemplateBuildRequest,
  type TemplateImageQuery,
} from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';
import { parseNdjson } from './ndjson';

export async function listTemplates(opts: ConnectionOptions = {}): Promise<Template[]> {
  const res = await new HttpClient(opts).json<{ items: Template[] }>('GET', '/v1/templates');
  return res.items;
}

export function getTemplate(name: string, opts: ConnectionOptions = {}): Promise<Template> {
  return new HttpClient(opts).json('GET', `/v1/templates/${encodeURIComponent(name)}`);
}

export interface BuildOptions extends ConnectionOptions {
  /** Each line of the build log; `step` is the 1-based recipe step it belongs to. */
  onLog?: (line: string, step?: number) => void;
}

/** Reads a build's ndjson stream to its end: the template, or the build's error. */
async function followBuild(res: Response, onLog: BuildOptions['onLog']): Promise<Template> {
  if (!res.body) throw new WarrenError('INTERNAL', 'build response has no body');
  for await (const event of parseNdjson<TemplateBuildEvent>(res.body)) {
    if (event.type === 'log') onLog?.(event.line, event.step);
    else if (event.type === 'done') return event.template;
    else
      throw new WarrenError(isErrorCode(event.code) ? event.code : 'INTERNAL', event.message, {
        ...(event.step !== undefined && { step: event.step }),
      });
  }
  throw new WarrenError('INTERNAL', 'the build log ended without a result');
}

/** Builds a template from a recipe (`base` + `steps`) or from an image path on the server. */
export async function buildTemplate(
  req: TemplateBuildRequest,
  opts: BuildOptions = {},
): Promise<Template> {
  const res = await new HttpClient(opts).request('POST', '/v1/templates', { json: req });
  return followBuild(res, opts.onLog);
}

/** Uploads an image (OCI layout or `docker save` tar, optionally gzipped) and builds a template. */
export async function uploadTemplateImage(
  name: string,
  image: Uint8Array | AsyncIterable<Uint8Array>,
  query: TemplateImageQuery = {},
  opts: BuildOptions = {},
): Promise<Template> {
  // start and ready are argv lists: repeated parameters.
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (v !== undefined) params.append(key, String(v));
    }
  }
  const qs = params.toString();
  const path = `/v1/templates/${encodeURIComponent(name)}/image${qs ? `?${qs}` : ''}`;
  const res = await new HttpClient(opts).request('POST', path, { body: image });
  return followBuild(res, opts.onLog);
}

/** Builds a template again (a built-in template that was never built is built now). */
export async function rebuildTemplate(name: string, opts: BuildOptions = {}): Promise<Template> {
  const res = await new HttpClient(opts).request(
    'POST',
    `/v1/templates/${encodeURIComponent(name)}/rebuild`,
  );
  return followBuild(res, opts.onLog);
}

/** Deletes a template; refused (TEMPLATE_IN_USE) while sandboxes or snapshots depend on it. */
export async function deleteTemplate(name: string, opts: ConnectionOptions = {}): Promise<void> {
  await new HttpClient(opts).request('DELETE', `/v1/templates/${encodeURIComponent(name)}`);
}
