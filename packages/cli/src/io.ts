/**
 * Where commands write, and how errors look. Commands get an Io instead of
 * touching process.stdout so tests can run the whole CLI in-process.
 */
export interface Output {
  write(chunk: string): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

export interface Io {
  stdout: Output;
  stderr: Output;
  stdin: AsyncIterable<Uint8Array | string>;
  /** What the process exits with when the command returns normally. */
  exitCode: number;
}

/** A writer for streamed output that waits for 'drain', so a slow terminal throttles the stream. */
export function writerFor(out: Output): (data: string) => void | Promise<void> {
  return (data) => {
    if (!out.write(data)) return new Promise<void>((resolve) => out.once('drain', resolve));
  };
}

/** `error [CODE]: message` for coded errors (API, connection, file system), `error: message` otherwise. */
export function formatError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? `error [${code}]: ${err.message}` : `error: ${err.message}`;
  }
  return `error: ${String(err)}`;
}

export async function readAll(input: AsyncIterable<Uint8Array | string>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of input) {
    text += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}
