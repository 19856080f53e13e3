/**
 * connectRemoteHost: HostApi for a host agent in another process or on
 * another machine, served there by serveHostApi (@warren/host-agent). The
 * control plane uses it like the in-process agent; the mapping of calls onto
 * HTTP(S) and WebSockets is in docs/multi-host.md ("Host agent transport").
 */
import type { Readable } from 'node:stream';
import type {
  HostApi,
  HostCodeApi,
  HostFileApi,
  HostProcessApi,
  HostPtyApi,
  HostSandboxApi,
  HostTemplateApi,
} from '@warren/protocol';
import { HostRpc } from './remote-rpc';
import { HostSockets, type EgressRecord } from './remote-sockets';

export type { EgressRecord } from './remote-sockets';

export interface RemoteHostOptions {
  /** The host's id (what its agent reports in info()). */
  id: string;
  /** Where its agent listens: `http(s)://host:port`. */
  url: string;
  /** The agent's credential, sent as `Authorization: Bearer <credential>`. */
  credential: string;
  /** The CA (PEM) that signed the agent's certificate, for a private or self-signed one. */
  ca?: string | Buffer;
  /** Egress decisions of the host's sandboxes, as its proxy makes them. */
  onEgressEvent?: (sandboxId: string, e: EgressRecord) => void;
  /** How long connecting (TCP, TLS, WebSocket handshake) may take; default 10 s. */
  timeoutMs?: number;
}

export interface RemoteHost extends HostApi {
  readonly url: string;
  /** Closes the client side; only `{ destroy: true }` is forwarded to the agent. */
  close(o?: { destroy?: boolean }): Promise<void>;
}

/** Drops the signal from an options argument: the abort travels as the request's end. */
function bare<T extends { signal?: AbortSignal }>(o: T | undefined): Omit<T, 'signal'> {
  const { signal: _signal, ...rest } = o ?? ({} as T);
  return rest;
}

function sandboxApi(rpc: HostRpc, sockets: HostSockets): HostSandboxApi {
  const c = <T>(m: string, args: unknown[]) => rpc.call<T>(`/host/sandboxes/${m}`, args);
  return {
    create: (...a) => c('create', a),
    destroy: (...a) => c('destroy', a),
    pause: (...a) => c('pause', a),
    resume: (...a) => c('resume', a),
    hibernate: (...a) => c('hibernate', a),
    wake: (...a) => c('wake', a),
    capture: (...a) => c('capture', a),
    releaseCapture: (...a) => c('releaseCapture', a),
    snapshot: (...a) => c('snapshot', a),
    live: () => c('live', []),
    cpuUsageNs: (...a) => c('cpuUsageNs', a),
    oomKilled: (...a) => c('oomKilled', a),
    usage: (...a) => c('usage', a),
    reclaim: (...a) => c('reclaim', a),
    checkNetwork: (...a) => c('checkNetwork', a),
    setNetwork: (...a) => c('setNetwork', a),
    openPort: (id, port, options) => sockets.openPort(id, port, options),
    reconcile: (...a) => c('reconcile', a),
  };
}

function processApi(rpc: HostRpc): HostProcessApi {
  const c = <T>(m: string, args: unknown[]) => rpc.call<T>(`/host/processes/${m}`, args);
  return {
    exec: (id, start, o) => rpc.events('/host/processes/exec', [id, start, bare(o)], o?.signal),
    start: (...a) => c('start', a),
    list: (...a) => c('list', a),
    get: (...a) => c('get', a),
    output: (id, pid, o) => rpc.events('/host/processes/output', [id, pid, bare(o)], o.signal),
    writeStdin: (...a) => c('writeStdin', a),
    signal: (...a) => c('signal', a),
  };
}

function ptyApi(rpc: HostRpc, sockets: HostSockets): HostPtyApi {
  const c = <T>(m: string, args: unknown[]) => rpc.call<T>(`/host/pty/${m}`, args);
  return {
    create: (...a) => c('create', a),
    list: (...a) => c('list', a),
    get: (...a) => c('get', a),
    resize: (...a) => c('resize', a),
    kill: (...a) => c('kill', a),
    attach: (id, ptyId, handlers, o) => sockets.attach([id, ptyId, o ?? {}], handlers),
  };
}

function codeApi(rpc: HostRpc): HostCodeApi {
  const c = <T>(m: string, args: unknown[]) => rpc.call<T>(`/host/code/${m}`, args);
  return {
    run: (id, req, o) => rpc.events('/host/code/run', [id, req, bare(o)], o?.signal),
    createContext: (...a) => c('createContext', a),
    listContexts: (...a) => c('listContexts', a),
    restartContext: (...a) => c('restartContext', a),
    deleteContext: (...a) => c('deleteContext', a),
    interrupt: (...a) => c('interrupt', a),
  };
}

function fileApi(rpc: HostRpc): HostFileApi {
  const c = <T>(m: string, args: unknown[]) => rpc.call<T>(`/host/files/${m}`, args);
  return {
    read: (id, path) => rpc.download('/host/files/read', [id, path]),
    write: (id, path, body: Readable, mode) =>
      rpc.upload('/host/files/write', mode === undefined ? [id, path] : [id, path, mode], body),
    list: (...a) => c('list', a),
    stat: (...a) => c('stat', a),
    mkdir: (...a) => c('mkdir', a),
    rename: (...a) => c('rename', a),
    remove: (...a) => c('remove', a),
    watch: (id, path, o) => rpc.events('/host/files/watch', [id, path, bare(o)], o.signal),
  };
}

function templateApi(rpc: HostRpc): HostTemplateApi {
  const c = <T>(m: string, args: unknown[]) => rpc.call<T>(`/host/templates/${m}`, args);
  const p = <T>(m: string, args: unknown[], progress: (l: string, s?: number) => void) =>
    rpc.progress<T>(`/host/templates/${m}`, args, progress);
  return {
    list: () => c('list', []),
    get: (...a) => c('get', a),
    ensure: (names, progress) => p('ensure', [names], progress),
    build: (req, progress) => p('build', [req], progress),
    checkNew: (...a) => c('checkNew', a),
    buildFromImage: (name, image, o, progress) =>
      rpc.progress('/host/templates/buildFromImage', [name, o], progress, image),
    rebuildReplacesRoot: (...a) => c('rebuildReplacesRoot', a),
    rebuild: (name, progress) => p('rebuild', [name], progress),
    remove: (...a) => c('remove', a),
    publish: (...a) => c('publish', a),
    fetch: (...a) => c('fetch', a),
  };
}

function group<T>(rpc: HostRpc, name: string, methods: readonly string[]): T {
  return Object.fromEntries(
    methods.map((m) => [m, (...args: unknown[]) => rpc.call(`/host/${name}/${m}`, args)]),
  ) as T;
}

/**
 * A client for the host agent at `o.url`. It does not need the agent to be
 * up: calls fail with HOST_UNREACHABLE while it is not, and the egress
 * subscription keeps trying (it resolves once the first attempt settled).
 */
export async function connectRemoteHost(o: RemoteHostOptions): Promise<RemoteHost> {
  const options = {
    id: o.id,
    url: o.url.replace(/\/+$/, ''),
    credential: o.credential,
    ca: o.ca,
    timeoutMs: o.timeoutMs ?? 10_000,
  };
  const rpc = new HostRpc(options);
  const sockets = new HostSockets(options);
  const events = o.onEgressEvent ? sockets.subscribe(o.onEgressEvent) : null;
  await events?.ready;
  return {
    id: o.id,
    url: options.url,
    info: () => rpc.call('/host/info', []),
    capacity: () => rpc.call('/host/capacity', []),
    sandboxes: sandboxApi(rpc, sockets),
    processes: processApi(rpc),
    pty: ptyApi(rpc, sockets),
    code: codeApi(rpc),
    files: fileApi(rpc),
    templates: templateApi(rpc),
    volumes: group(rpc, 'volumes', ['create', 'remove', 'usedBytes', 'mount', 'clone']),
    snapshots: group(rpc, 'snapshots', ['delete']),
    archive: group(rpc, 'archive', ['collect', 'upload', 'put', 'get', 'list', 'remove']),
    async close(c = {}) {
      events?.stop();
      try {
        if (c.destroy) await rpc.call('/host/close', [{ destroy: true }]);
      } finally {
        sockets.closeAll();
        await rpc.close();
      }
    },
  };
}
