/**
 * Language servers of a sandbox, through HostApi: a server of its own for
 * each WebSocket, warm servers for the compact calls, and the short-lived
 * query tokens that let a browser open the WebSocket.
 */
import { posix } from 'node:path';
import {
  LSP_MAX_FILE_BYTES,
  LSP_SERVERS,
  LSP_TOKEN_TTL_SECONDS,
  WarrenError,
  randomText,
  type HostApi,
  type LspAction,
  type LspActionRequest,
  type LspActionResult,
  type LspLanguage,
  type LspToken,
} from '@warren/protocol';
import { hashToken, type Principal } from '../auth';
import type { Config } from '../config';
import type { SandboxLifecycle } from '../sandboxes/lifecycle';
import { diagnosticLines, hoverText, locations, symbolLines, toPosition } from './compact';
import { LanguageServerProcess, checkInstalled, checkRoot } from './server-process';
import { WarmServers } from './warm';

/** `wlsp_` plus 40 random characters. */
export const LSP_TOKEN_PREFIX = 'wlsp_';
/** The root of a WebSocket's server when the query names none. */
export const DEFAULT_ROOT = '/root';

interface IssuedToken {
  principal: Principal;
  sandboxId: string;
  expiresAt: number;
}

function languageId(language: LspLanguage, path: string): string {
  if (language === 'python') return 'python';
  if (/\.[cm]?jsx?$/.test(path)) return path.endsWith('x') ? 'javascriptreact' : 'javascript';
  return path.endsWith('.tsx') ? 'typescriptreact' : 'typescript';
}

async function readText(host: HostApi, id: string, path: string): Promise<string> {
  const info = await host.files.stat(id, path);
  if (info.type === 'dir') throw new WarrenError('IS_A_DIRECTORY', `${path} is a directory`);
  if (info.size > LSP_MAX_FILE_BYTES)
    throw new WarrenError(
      'PAYLOAD_TOO_LARGE',
      `${path} is ${info.size} bytes; the language calls open files of up to ${LSP_MAX_FILE_BYTES}`,
    );
  const { stream } = await host.files.read(id, path);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export class LspService {
  private readonly tokens = new Map<string, IssuedToken>();
  readonly warm: WarmServers;

  constructor(
    private readonly host: HostApi,
    private readonly lifecycle: SandboxLifecycle,
    config: Config,
  ) {
    this.warm = new WarmServers(host, () => config.lspIdleSeconds);
  }

  private async use(orgId: string, id: string): Promise<string> {
    return (await this.lifecycle.use(orgId, id)).id;
  }

  /** Checks (without starting anything) that the server and the root are there. */
  async describe(orgId: string, id: string, language: LspLanguage, root = DEFAULT_ROOT) {
    const sid = await this.use(orgId, id);
    await checkRoot(this.host, sid, root);
    const command = await checkInstalled(this.host, sid, language);
    return { language, root, command: [command, ...LSP_SERVERS[language].args] };
  }

  /** A server of its own for one WebSocket (the socket kills it when it closes). */
  async open(orgId: string, id: string, language: LspLanguage, root = DEFAULT_ROOT) {
    return LanguageServerProcess.start(this.host, await this.use(orgId, id), language, root);
  }

  /** Counts a long WebSocket as activity of the sandbox when it ends. */
  activity(orgId: string, id: string): Promise<void> {
    return this.lifecycle.activity(orgId, id);
  }

  /** One compact call: the file is opened (or updated) in the warm server, then asked. */
  async action(
    orgId: string,
    id: string,
    action: LspAction,
    body: LspActionRequest,
  ): Promise<LspActionResult> {
    const sid = await this.use(orgId, id);
    if (!body.path.startsWith('/') && !body.root)
      throw new WarrenError('INVALID_PATH', 'path must be absolute, or relative to a root');
    const path = posix.resolve(body.root ?? '/', body.path);
    const root = posix.normalize(body.root ?? posix.dirname(path));
    const positional = action === 'definition' || action === 'references' || action === 'hover';
    if (positional && (body.line === undefined || body.col === undefined))
      throw new WarrenError('INVALID_REQUEST', `${action} needs line and col (1-based)`);
    const text = await readText(this.host, sid, path);
    const position = positional ? toPosition(text, body.line!, body.col!) : null;
    const warm = await this.warm.get(sid, body.language, root);
    return warm.run(async () => {
      const uri = await warm.sync(path, text, languageId(body.language, path));
      const at = { textDocument: { uri }, position };
      switch (action) {
        case 'definition':
          return locations(await warm.request('textDocument/definition', at), root);
        case 'references':
          return locations(
            await warm.request('textDocument/references', {
              ...at,
              context: { includeDeclaration: true },
            }),
            root,
          );
        case 'hover':
          return hoverText(await warm.request('textDocument/hover', at), root);
        case 'symbols':
          return symbolLines(
            path,
            await warm.request('textDocument/documentSymbol', { textDocument: { uri } }),
            root,
          );
        case 'diagnostics':
          return diagnosticLines(path, await warm.diagnostics(uri), root);
      }
    });
  }

  /** A token for ?token= on this sandbox's language server WebSocket. */
  async issueToken(principal: Principal, id: string, ttlSeconds = LSP_TOKEN_TTL_SECONDS) {
    await this.lifecycle.get(principal.orgId, id); // the sandbox exists, in this organisation
    const now = Date.now();
    for (const [hash, t] of this.tokens) if (t.expiresAt <= now) this.tokens.delete(hash);
    const token = LSP_TOKEN_PREFIX + randomText(40);
    const expiresAt = now + Math.min(ttlSeconds, LSP_TOKEN_TTL_SECONDS) * 1000;
    this.tokens.set(hashToken(token), { principal, sandboxId: id, expiresAt });
    return { token, expires_at: new Date(expiresAt).toISOString() } satisfies LspToken;
  }

  /** Takes a query token (once); UNAUTHORIZED unless it is for this sandbox and not expired. */
  redeemToken(token: string, id: string): Principal {
    const hash = hashToken(token);
    const issued = this.tokens.get(hash);
    if (issued) this.tokens.delete(hash);
    if (!issued || issued.sandboxId !== id)
      throw new WarrenError('UNAUTHORIZED', 'invalid or already used language server token');
    if (issued.expiresAt <= Date.now())
      throw new WarrenError('UNAUTHORIZED', 'the language server token has expired');
    return issued.principal;
  }
}
