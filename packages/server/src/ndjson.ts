import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { ExecEvent } from '@warren/protocol';

/** Parses a newline-delimited JSON stream of exec events. */
export async function* execEvents(body: Readable): AsyncGenerator<ExecEvent> {
  const lines = createInterface({ input: body, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim()) yield JSON.parse(line) as ExecEvent;
  }
}
