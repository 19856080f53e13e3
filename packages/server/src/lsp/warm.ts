/**
 * Language servers kept warm for the compact calls: one per sandbox, language
 * and root, started on first use, spoken to with vscode-jsonrpc's
 * MessageConnection, stopped after `idleSeconds` without a call (or when its
 * process ends: the sandbox paused, stopped or was destroyed). Calls on one
 * server run one at a time, so the documents it has open stay in step.
 */
import { pathToFileURL } from 'node:url';
import {
  LSP_MAX_WARM_PER_SANDBOX,
  WarrenError,
  type HostApi,
  type LspLanguage,
} from '@warren/protocol';
import { createMessageConnection, type MessageConnection } from 'vscode-jsonrpc';
import { LanguageServerProcess } from './server-process';

/** Longest wait for one answer of the server (its first answer indexes the project). */
const REQUEST_TIMEOUT_MS = 60_000;
/** Longest wait for diagnostics after a change (pylsp lints after a 0.5 s debounce). */
const DIAGNOSTICS_TIMEOUT_MS = 20_000;
/** Diagnostics count as complete once none came for this long (at most SETTLE_MAX_MS more). */
const SETTLE_MS = 700;
const SETTLE_MAX_MS = 5000;

export interface LspDiagnostic {
  range: { start: { line: number; character: number } };
  severity?: number;
  message: string;
  source?: string;
  code?: string | number;
}

interface OpenDoc {
  version: number;
  text: string;
  /** Diagnostics published since the last change, if any yet. */
  diagnostics: LspDiagnostic[] | null;
  /** When the server last published them (some publish in steps: syntax, then types). */
  publishedAt: number;
  waiters: Array<(d: LspDiagnostic[]) => void>;
}

export function fileUri(path: string): string {
  return pathToFileURL(path).href;
}

export class WarmServer {
  private readonly docs = new Map<string, OpenDoc>();
  private queue: Promise<unknown> = Promise.resolve();
  lastUsed = Date.now();
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly key: string,
    readonly root: string,
    readonly process: LanguageServerProcess,
    readonly connection: MessageConnection,
  ) {
    connection.onNotification(
      'textDocument/publishDiagnostics',
      (p: { uri: string; diagnostics: LspDiagnostic[] }) => {
        const doc = this.docs.get(p.uri);
        if (!doc) return;
        doc.diagnostics = p.diagnostics;
        doc.publishedAt = Date.now();
        for (const w of doc.waiters.splice(0)) w(p.diagnostics);
      },
    );
  }

  /** Runs `fn` after every call before it on this server. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    this.busy += 1;
    const next = this.queue.then(fn).finally(() => {
      this.busy -= 1;
      this.lastUsed = Date.now();
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Calls queued or running: the idle time counts only from the end of the last. */
  private busy = 0;

  /** Stops the server (onIdle) once it has had no call for idleMs. */
  touch(idleMs: number, onIdle: () => void): void {
    this.lastUsed = Date.now();
    const arm = (ms: number) => {
      if (this.idleTimer) clearTimeout(this.idleTimer);
      this.idleTimer = setTimeout(() => {
        const left = this.lastUsed + idleMs - Date.now();
        if (this.busy > 0) arm(idleMs);
        else if (left > 0) arm(left);
        else onIdle();
      }, ms);
      this.idleTimer.unref();
    };
    arm(idleMs);
  }

  clearTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
  }

  /** Opens the file, or sends its new text when it changed since the last call. */
  async sync(path: string, text: string, languageId: string): Promise<string> {
    const uri = fileUri(path);
    const doc = this.docs.get(uri);
    if (!doc) {
      this.docs.set(uri, { version: 1, text, diagnostics: null, publishedAt: 0, waiters: [] });
      await this.connection.sendNotification('textDocument/didOpen', {
        textDocument: { uri, languageId, version: 1, text },
      });
    } else if (doc.text !== text) {
      doc.version += 1;
      doc.text = text;
      doc.diagnostics = null;
      await this.connection.sendNotification('textDocument/didChange', {
        textDocument: { uri, version: doc.version },
        contentChanges: [{ text }],
      });
    }
    return uri;
  }

  /** An error answer of the server is LANGUAGE_SERVER_FAILED with its message. */
  request<T>(method: string, params: unknown): Promise<T> {
    const answer = this.connection.sendRequest<T>(method, params).catch((err: unknown) => {
      const msg = err instanceof Error ? err.message : String(err);
      throw new WarrenError(
        'LANGUAGE_SERVER_FAILED',
        `the language server failed ${method}: ${msg}`,
      );
    });
    return withTimeout(answer, REQUEST_TIMEOUT_MS, `the language server did not answer ${method}`);
  }

  /** The diagnostics of the file's current text: those published since the last change. */
  async diagnostics(uri: string): Promise<LspDiagnostic[]> {
    const doc = this.docs.get(uri);
    if (!doc) return [];
    if (!doc.diagnostics)
      await withTimeout(
        new Promise<LspDiagnostic[]>((resolve) => doc.waiters.push(resolve)),
        DIAGNOSTICS_TIMEOUT_MS,
        'the language server published no diagnostics for the file',
      );
    // Until the server has been quiet for a moment: later steps replace the first publish.
    const until = Date.now() + SETTLE_MAX_MS;
    for (;;) {
      const quiet = doc.publishedAt + SETTLE_MS - Date.now();
      if (quiet <= 0 || Date.now() >= until) break;
      await new Promise((r) => setTimeout(r, quiet));
    }
    return doc.diagnostics ?? [];
  }

  async stop(): Promise<void> {
    this.clearTimer();
    try {
      await withTimeout(this.connection.sendRequest('shutdown'), 2000, 'shutdown');
      await this.connection.sendNotification('exit');
    } catch {
      // killed below either way
    }
    this.connection.dispose();
    await this.process.stop();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new WarrenError('LANGUAGE_SERVER_FAILED', `${what} within ${ms / 1000} s`)),
      ms,
    );
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** The initialize request a warm server gets: what the compact calls use, plainly. */
function initializeParams(root: string) {
  return {
    processId: null,
    rootUri: fileUri(root),
    rootPath: root,
    workspaceFolders: [{ uri: fileUri(root), name: root }],
    capabilities: {
      textDocument: {
        synchronization: { didSave: false },
        hover: { contentFormat: ['plaintext', 'markdown'] },
        definition: { linkSupport: false },
        references: {},
        documentSymbol: { hierarchicalDocumentSymbolSupport: true },
        publishDiagnostics: { relatedInformation: false },
      },
      workspace: { workspaceFolders: true },
    },
  };
}

export class WarmServers {
  private readonly servers = new Map<string, Promise<WarmServer>>();

  constructor(
    private readonly host: HostApi,
    private readonly idleSeconds: () => number,
  ) {}

  /** The warm server of this sandbox, language and root, started if there is none. */
  async get(sandboxId: string, language: LspLanguage, root: string): Promise<WarmServer> {
    const key = `${sandboxId}\0${language}\0${root}`;
    let entry = this.servers.get(key);
    if (entry) {
      const warm = await entry.catch(() => null);
      if (warm?.process.running) return this.touch(warm);
      if (this.servers.get(key) === entry) this.servers.delete(key);
    }
    await this.evict(sandboxId);
    entry = this.start(key, sandboxId, language, root);
    this.servers.set(key, entry);
    entry.catch(() => {
      if (this.servers.get(key) === entry) this.servers.delete(key);
    });
    return this.touch(await entry);
  }

  private touch(warm: WarmServer): WarmServer {
    warm.touch(this.idleSeconds() * 1000, () => void this.stop(warm.key));
    return warm;
  }

  private async start(
    key: string,
    sandboxId: string,
    language: LspLanguage,
    root: string,
  ): Promise<WarmServer> {
    const proc = await LanguageServerProcess.start(this.host, sandboxId, language, root);
    const connection = createMessageConnection(proc.reader, proc.writer);
    const warm = new WarmServer(key, root, proc, connection);
    connection.listen();
    void proc.ended.then(() => {
      warm.clearTimer();
      connection.dispose();
      void proc.stop();
      if (this.servers.get(key))
        void this.servers.get(key)!.then((w) => w === warm && this.servers.delete(key));
    });
    try {
      await warm.request('initialize', initializeParams(root));
      await connection.sendNotification('initialized', {});
    } catch (err) {
      await warm.stop();
      const tail = proc.stderrTail;
      if (err instanceof WarrenError && tail)
        throw new WarrenError(err.code, `${err.message}: ${tail}`);
      throw err;
    }
    return warm;
  }

  /** Keeps at most LSP_MAX_WARM_PER_SANDBOX - 1 servers of the sandbox, before one more starts. */
  private async evict(sandboxId: string): Promise<void> {
    const mine: WarmServer[] = [];
    for (const [key, entry] of this.servers)
      if (key.startsWith(`${sandboxId}\0`)) {
        const warm = await entry.catch(() => null);
        if (warm) mine.push(warm);
      }
    mine.sort((a, b) => a.lastUsed - b.lastUsed);
    for (const warm of mine.slice(0, Math.max(0, mine.length - LSP_MAX_WARM_PER_SANDBOX + 1)))
      await this.stop(warm.key);
  }

  async stop(key: string): Promise<void> {
    const entry = this.servers.get(key);
    if (!entry) return;
    this.servers.delete(key);
    const warm = await entry.catch(() => null);
    await warm?.stop();
  }

  /** Stops every warm server (the platform is closing). */
  async close(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((k) => this.stop(k)));
  }
}
