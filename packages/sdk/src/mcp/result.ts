/**
 * How tool results look: JSON text a model can read back, output trimmed to
 * a size that fits in its context, and API failures as tool errors whose
 * text starts with Warren's error code (`SANDBOX_NOT_FOUND: ...`), so a model
 * sees what went wrong instead of the call failing at the protocol level.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** Characters of stdout, stderr or file content a tool returns at most (each). */
export const MAX_OUTPUT_CHARS = 20_000;

export function ok(value: unknown): CallToolResult {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return { content: [{ type: 'text', text }] };
}

export function toolError(err: unknown): CallToolResult {
  const code =
    typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string'
      ? (err as { code: string }).code
      : 'INTERNAL';
  const message = err instanceof Error ? err.message : String(err);
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] };
}

/** Runs a tool body; any failure becomes a tool error rather than a protocol error. */
export async function guarded(body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await body();
  } catch (err) {
    return toolError(err);
  }
}

export interface Trimmed {
  text: string;
  /** Characters left out of the middle; 0 when nothing was. */
  omitted: number;
}

/** Keeps the head and the tail (where errors usually are) of a long text. */
export function trim(text: string, max = MAX_OUTPUT_CHARS): Trimmed {
  if (text.length <= max) return { text, omitted: 0 };
  const half = Math.floor(max / 2);
  const omitted = text.length - 2 * half;
  return {
    text: `${text.slice(0, half)}\n[... ${omitted} characters omitted ...]\n${text.slice(-half)}`,
    omitted,
  };
}
