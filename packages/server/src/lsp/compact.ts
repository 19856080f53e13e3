/**
 * The compact calls' answers: LSP results turned into short text an agent can
 * read (`path:line:col` lines, 1-based), and the checks of a request's
 * position against the file's text.
 */
import { fileURLToPath } from 'node:url';
import { WarrenError, type LspActionResult } from '@warren/protocol';
import type { LspDiagnostic } from './warm';

/** Results listed in `text` at most; `count` still counts them all. */
export const MAX_RESULTS = 200;
/** Hover text kept at most. */
export const MAX_HOVER_CHARS = 4000;

interface Position {
  line: number;
  character: number;
}
interface Range {
  start: Position;
  end: Position;
}
interface Location {
  uri: string;
  range: Range;
}
interface LocationLink {
  targetUri: string;
  targetSelectionRange: Range;
}

/** The LSP position (0-based) of a 1-based line and column, checked against the text. */
export function toPosition(text: string, line: number, col: number): Position {
  const lines = text.split('\n');
  if (line > lines.length)
    throw new WarrenError(
      'POSITION_OUT_OF_RANGE',
      `line ${line} is past the end of the file (${lines.length} lines)`,
      { lines: lines.length },
    );
  const length = lines[line - 1]!.replace(/\r$/, '').length;
  if (col > length + 1)
    throw new WarrenError(
      'POSITION_OUT_OF_RANGE',
      `column ${col} is past the end of line ${line} (${length} characters)`,
      { line_length: length },
    );
  return { line: line - 1, character: col - 1 };
}

function pathOf(uri: string): string {
  try {
    return uri.startsWith('file:') ? fileURLToPath(uri) : uri;
  } catch {
    return uri;
  }
}

function where(uri: string, p: Position): string {
  return `${pathOf(uri)}:${p.line + 1}:${p.character + 1}`;
}

function result(lines: string[], root: string): LspActionResult {
  return {
    text: lines.slice(0, MAX_RESULTS).join('\n'),
    count: lines.length,
    truncated: lines.length > MAX_RESULTS,
    root,
  };
}

/** Definition and references: one `path:line:col` line per location, in the server's order. */
export function locations(
  raw: Location | Location[] | LocationLink[] | null,
  root: string,
): LspActionResult {
  const list = raw === null ? [] : Array.isArray(raw) ? raw : [raw];
  const lines = list.map((l) =>
    'targetUri' in l
      ? where(l.targetUri, l.targetSelectionRange.start)
      : where(l.uri, l.range.start),
  );
  return result([...new Set(lines)], root);
}

type MarkedString = string | { language: string; value: string };
interface Hover {
  contents: MarkedString | MarkedString[] | { kind: string; value: string };
}

/** Hover: the server's text, without Markdown code fences. */
export function hoverText(raw: Hover | null, root: string): LspActionResult {
  const parts = !raw ? [] : Array.isArray(raw.contents) ? raw.contents : [raw.contents];
  const text = parts
    .map((p) => (typeof p === 'string' ? p : p.value))
    .join('\n\n')
    .replace(/^```[a-z0-9]*\n?/gim, '')
    .trim();
  const truncated = text.length > MAX_HOVER_CHARS;
  return {
    text: truncated ? `${text.slice(0, MAX_HOVER_CHARS)}...` : text,
    count: text ? 1 : 0,
    truncated,
    root,
  };
}

const SEVERITY = ['', 'error', 'warning', 'info', 'hint'];

/** Diagnostics: `path:line:col: severity: message (source)`, in the file's order. */
export function diagnosticLines(
  path: string,
  diags: LspDiagnostic[],
  root: string,
): LspActionResult {
  const sorted = [...diags].sort(
    (a, b) =>
      a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character,
  );
  const lines = sorted.map((d) => {
    const p = d.range.start;
    const source = d.source ? ` (${d.source})` : '';
    const msg = d.message.replace(/\s*\n\s*/g, ' ');
    return `${path}:${p.line + 1}:${p.character + 1}: ${SEVERITY[d.severity ?? 1] ?? 'error'}: ${msg}${source}`;
  });
  return result(lines, root);
}

/** LSP SymbolKind numbers, as words. */
const KINDS = [
  '',
  'file',
  'module',
  'namespace',
  'package',
  'class',
  'method',
  'property',
  'field',
  'constructor',
  'enum',
  'interface',
  'function',
  'variable',
  'constant',
  'string',
  'number',
  'boolean',
  'array',
  'object',
  'key',
  'null',
  'enum-member',
  'struct',
  'event',
  'operator',
  'type-parameter',
];

interface DocumentSymbol {
  name: string;
  kind: number;
  selectionRange: Range;
  children?: DocumentSymbol[];
}
interface SymbolInformation {
  name: string;
  kind: number;
  location: Location;
  containerName?: string;
}

/** Symbols: `path:line:col kind name` (nested names as Outer.inner), in the file's order. */
export function symbolLines(
  path: string,
  raw: Array<DocumentSymbol | SymbolInformation> | null,
  root: string,
): LspActionResult {
  const out: Array<{ at: Position; line: string }> = [];
  const walk = (s: DocumentSymbol | SymbolInformation, prefix: string) => {
    const kind = KINDS[s.kind] ?? 'symbol';
    if ('location' in s) {
      const name = s.containerName ? `${s.containerName}.${s.name}` : s.name;
      const at = s.location.range.start;
      out.push({ at, line: `${where(s.location.uri, at)} ${kind} ${name}` });
      return;
    }
    const at = s.selectionRange.start;
    out.push({ at, line: `${path}:${at.line + 1}:${at.character + 1} ${kind} ${prefix}${s.name}` });
    for (const c of s.children ?? []) walk(c, `${prefix}${s.name}.`);
  };
  for (const s of raw ?? []) walk(s, '');
  out.sort((a, b) => a.at.line - b.at.line || a.at.character - b.at.character);
  return result(
    out.map((o) => o.line),
    root,
  );
}
