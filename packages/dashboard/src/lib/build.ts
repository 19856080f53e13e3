/**
 * Template builds from the dashboard: the recipe the form describes, and the
 * build log the API streams back as newline-delimited JSON. Pure, unit-tested;
 * the page (pages/Templates.tsx) feeds it the response body.
 */

export type RecipeStep = { run: string } | { workdir: string } | { env: Record<string, string> };

/**
 * The steps of the form's text: one shell command per line (a `run` step);
 * blank lines and lines starting with `#` are skipped; `WORKDIR /path` and
 * `ENV KEY=value` lines set the working directory and the environment.
 */
export function parseSteps(text: string): { steps: RecipeStep[]; error: string | null } {
  const steps: RecipeStep[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line || line.startsWith('#')) continue;
    const word = /^(WORKDIR|ENV)\s+(.*)$/.exec(line);
    if (word?.[1] === 'WORKDIR') {
      if (!word[2]!.startsWith('/'))
        return { steps, error: `line ${i + 1}: WORKDIR needs an absolute path` };
      steps.push({ workdir: word[2]! });
    } else if (word?.[1] === 'ENV') {
      const eq = word[2]!.indexOf('=');
      if (eq <= 0) return { steps, error: `line ${i + 1}: ENV needs KEY=value` };
      steps.push({ env: { [word[2]!.slice(0, eq).trim()]: word[2]!.slice(eq + 1).trim() } });
    } else {
      steps.push({ run: line });
    }
  }
  if (steps.length === 0) return { steps, error: 'give at least one step' };
  return { steps, error: null };
}

/** One line of a build log stream. */
export type BuildEvent =
  | { type: 'log'; line: string; step?: number }
  | { type: 'done'; template: { name: string; state: string; build_ms?: number | null } }
  | { type: 'error'; code: string; message: string; step?: number };

/**
 * Splits streamed text into complete lines: what is left after the last newline
 * is kept for the next chunk. Answers the parsed events and the rest.
 */
export function takeEvents(buffer: string): { events: BuildEvent[]; rest: string } {
  const events: BuildEvent[] = [];
  const parts = buffer.split('\n');
  const rest = parts.pop() ?? '';
  for (const part of parts) {
    const text = part.trim();
    if (!text) continue;
    try {
      events.push(JSON.parse(text) as BuildEvent);
    } catch {
      events.push({ type: 'log', line: text });
    }
  }
  return { events, rest };
}

/** Reads a build response to its end, calling `onEvent` for every line as it arrives. */
export async function readBuild(res: Response, onEvent: (e: BuildEvent) => void): Promise<void> {
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const { events, rest } = takeEvents(buffer + value);
    buffer = rest;
    events.forEach(onEvent);
  }
  takeEvents(buffer + '\n').events.forEach(onEvent);
}

/** A log line as shown: `[step 2] line` for a step's own output. */
export function formatLogLine(e: BuildEvent): string {
  if (e.type === 'log') return e.step !== undefined ? `[step ${e.step}] ${e.line}` : e.line;
  if (e.type === 'done')
    return `done: ${e.template.name} is ${e.template.state}${e.template.build_ms ? ` (${(e.template.build_ms / 1000).toFixed(1)} s)` : ''}`;
  return `error ${e.code}${e.step !== undefined ? ` at step ${e.step}` : ''}: ${e.message}`;
}
