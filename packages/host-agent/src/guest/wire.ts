/** Reading what the guest agent sends: text bodies, error bodies, ndjson event streams. */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { WarrenError, isErrorCode, type ErrorBody, type ExecEvent } from '@warren/protocol';

/** A guest error body becomes a WarrenError with the guest's code. */
export function errorFrom(status: number, text: string): WarrenError {
  try {
    const body = JSON.parse(text) as ErrorBody;
    if (isErrorCode(body.error?.code)) return new WarrenError(body.error.code, body.error.message);
  } catch {
    // not a JSON error body
  }
  return new WarrenError('INTERNAL', `guest agent answered ${status}`);
}

export async function readText(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function drain(stream: Readable): Promise<void> {
  for await (const _ of stream) void _;
}

/** Parses a newline-delimited JSON stream of exec events; `stop` ends it early. */
export async function* execEvents(body: Readable, stop?: AbortSignal): AsyncGenerator<ExecEvent> {
  const lines = createInterface({ input: body, crlfDelay: Infinity, signal: stop });
  for await (const line of lines) {
    if (line.trim()) yield JSON.parse(line) as ExecEvent;
  }
}
