/**
 * Parsers for option values and operands. They throw commander's
 * InvalidArgumentError so a bad value is reported like any usage error.
 */
import { InvalidArgumentError } from 'commander';

/** `K=V` into a pair; the value may itself contain '=' and may be empty. */
export function parseKeyValue(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected KEY=VALUE, got "${text}"`);
  return [text.slice(0, eq), text.slice(eq + 1)];
}

/** Option parser for repeatable `--env K=V`: folds each value into one record. */
export function collectKeyValue(text: string, previous: Record<string, string> = {}) {
  const [key, value] = parseKeyValue(text);
  return { ...previous, [key]: value };
}

/** Undefined for a missing or empty record, so the API applies its own defaults. */
export function nonEmpty(record: Record<string, string> = {}): Record<string, string> | undefined {
  return Object.keys(record).length ? record : undefined;
}

/** Option parser for repeatable `--volume NAME:PATH[:ro]`. */
export function collectVolume(
  text: string,
  previous: Array<{ name: string; mount_path: string; read_only: boolean }> = [],
) {
  const m = /^([^:]+):(\/[^:]*)(?::(ro|rw))?$/.exec(text);
  if (!m) throw new InvalidArgumentError(`expected NAME:/PATH or NAME:/PATH:ro, got "${text}"`);
  return [...previous, { name: m[1]!, mount_path: m[2]!, read_only: m[3] === 'ro' }];
}

export function parsePositiveInt(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

export function parsePositiveNumber(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || text.trim() === '') {
    throw new InvalidArgumentError('expected a positive number');
  }
  return n;
}

export interface CpTarget {
  /** Set when the operand names a sandbox path (`<sandbox-id>:<path>`). */
  sandboxId?: string;
  path: string;
}

/**
 * `sbx_123:/etc/hosts` is a sandbox path, anything else a local one. As with
 * `docker cp`, a colon only counts when no '/' comes before it, so a local
 * file with a colon in its name can be written `./a:b`.
 */
export function parseCpTarget(text: string): CpTarget {
  const colon = text.indexOf(':');
  const slash = text.indexOf('/');
  if (colon <= 0 || (slash !== -1 && slash < colon)) return { path: text };
  const path = text.slice(colon + 1);
  if (!path) throw new InvalidArgumentError(`missing path after "${text}"`);
  return { sandboxId: text.slice(0, colon), path };
}
