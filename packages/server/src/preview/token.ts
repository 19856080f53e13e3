/** Preview tokens and how preview URLs are shown. */
import { randomText } from '@warren/protocol';

/** `wpt_` plus 40 random characters: recognisable, and not an API token. */
export const PREVIEW_TOKEN_PREFIX = 'wpt_';

export function newPreviewToken(): string {
  return PREVIEW_TOKEN_PREFIX + randomText(40);
}

/** The sandbox's preview URL with `{port}` left for the caller to fill in. */
export function previewUrl(template: string | undefined, id: string): string {
  return (template ?? 'http://{port}-{id}.localhost').replaceAll('{id}', id);
}
