/** The guest's code interpreter routes (GUEST_PATHS.code): runs, contexts, interrupts. */
import type { ServerHttp2Stream } from 'node:http2';
import type { CodeContextCreateRequest, CodeRunRequest } from '@warren/protocol';
import { GUEST_PATHS } from '@warren/protocol/guest';
import { readJson } from './body';
import type { CodeInterpreter } from './code';
import { sendJson } from './respond';

const CONTEXT = /^\/code\/contexts\/([A-Za-z0-9_.-]+)(\/restart)?$/;
const EXECUTION = /^\/code\/executions\/([A-Za-z0-9_.-]+)$/;

/**
 * A run streams its events as ndjson until `end`. A host that goes away
 * first (its client disconnected) interrupts the run, so the context is not
 * left busy with code nobody waits for.
 */
async function run(code: CodeInterpreter, stream: ServerHttp2Stream): Promise<void> {
  const req = await readJson<CodeRunRequest>(stream);
  let ended = false;
  const handle = await code.run(req, (event) => {
    if (ended || stream.destroyed) return;
    if (!stream.headersSent)
      stream.respond({ ':status': 200, 'content-type': 'application/x-ndjson' });
    if (event.type === 'end') {
      ended = true;
      stream.end(JSON.stringify(event) + '\n');
    } else stream.write(JSON.stringify(event) + '\n');
  });
  if (stream.destroyed) handle.interrupt();
  else
    stream.once('close', () => {
      if (!ended) handle.interrupt();
    });
}

/** True when the request was one of these routes (and has been answered). */
export async function routeCode(
  code: CodeInterpreter,
  stream: ServerHttp2Stream,
  method: string,
  path: string,
): Promise<boolean> {
  if (!path.startsWith(GUEST_PATHS.code + '/')) return false;
  if (path === '/code/run' && method === 'POST') {
    await run(code, stream);
    return true;
  }
  if (path === '/code/contexts') {
    if (method === 'GET') {
      sendJson(stream, 200, { items: await code.listContexts() });
      return true;
    }
    if (method === 'POST') {
      const body = await readJson<CodeContextCreateRequest>(stream);
      sendJson(stream, 201, await code.createContext(body.language, body.cwd));
      return true;
    }
  }
  const ctx = CONTEXT.exec(path);
  if (ctx?.[1]) {
    if (ctx[2] && method === 'POST') {
      sendJson(stream, 200, await code.restartContext(ctx[1]));
      return true;
    }
    if (!ctx[2] && method === 'DELETE') {
      await code.deleteContext(ctx[1]);
      sendJson(stream, 200, { ok: true });
      return true;
    }
  }
  const exe = EXECUTION.exec(path);
  if (exe?.[1] && method === 'DELETE') {
    await code.interrupt(exe[1]);
    sendJson(stream, 200, { ok: true });
    return true;
  }
  return false;
}
