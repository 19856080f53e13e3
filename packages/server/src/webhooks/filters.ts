/** Event filters of endpoints and the URLs they are delivered to. */
import { WEBHOOK_EVENT_TYPES, WarrenError } from '@warren/protocol';

const FAMILIES = new Set(WEBHOOK_EVENT_TYPES.map((t) => t.split('.')[0]));

/** Throws INVALID_EVENT_FILTER unless every filter names a type, a `family.*` or `*`. */
export function checkFilters(filters: readonly string[]): void {
  for (const f of filters) {
    if (f === '*') continue;
    if (f.endsWith('.*') && FAMILIES.has(f.slice(0, -2))) continue;
    if ((WEBHOOK_EVENT_TYPES as readonly string[]).includes(f)) continue;
    throw new WarrenError(
      'INVALID_EVENT_FILTER',
      `unknown event filter ${JSON.stringify(f)}: use an event type (${WEBHOOK_EVENT_TYPES.join(', ')}), a family such as sandbox.*, or *`,
      { filter: f },
    );
  }
}

/** Whether an event of this type goes to an endpoint with these filters. */
export function matchesFilters(filters: readonly string[], type: string): boolean {
  return filters.some(
    (f) => f === '*' || f === type || (f.endsWith('.*') && type.startsWith(f.slice(0, -1))),
  );
}

/** Throws INVALID_WEBHOOK_URL unless the URL is absolute http(s). Returns it normalised. */
export function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new WarrenError('INVALID_WEBHOOK_URL', `not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new WarrenError(
      'INVALID_WEBHOOK_URL',
      `webhook URLs must be http:// or https://, not ${parsed.protocol}`,
    );
  if (parsed.username || parsed.password)
    throw new WarrenError(
      'INVALID_WEBHOOK_URL',
      'webhook URLs may not carry credentials: verify the signature instead',
    );
  return parsed.toString();
}
