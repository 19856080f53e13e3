/**
 * HostApi: the one contract between the control plane and a host agent.
 *
 * Everything crossing it is addressed by ids and made of protocol types:
 * no guest channel, runtime spec or host path. The in-process agent
 * (`createHostAgent` in @warren/host-agent) implements it today; an agent on
 * another machine implements the same interface behind a network transport.
 * Byte streams (exec output, files, port connections) are Node streams and
 * async iterables, which a transport maps onto its own framing.
 */
import type { Duplex, Readable } from 'node:stream';
import type {
  CodeContext,
  CodeContextCreateRequest,
  CodeEvent,
  CodeRunRequest,
  ExecEvent,
  FileInfo,
  FileWatchEvent,
  FileList,
  MkdirRequest,
  ProcessInfo,
  PtyInfo,
  RenameRequest,
  SignalRequest,
  StdinRequest,
  WriteResult,
} from './api';
import type { GuestProcessStart, GuestPtyStart, OpenPortOptions } from './guest';
import type { HostTemplateApi } from './host-templates';
import type { EgressSecret, NetworkPolicy } from './network';

export type { BuildProgress, HostTemplateApi } from './host-templates';

/** A sandbox's egress policy and the secrets its requests get on the way out. */
export interface SandboxNetwork {
  policy: NetworkPolicy;
  secrets: EgressSecret[];
}

/** A volume bound into a sandbox: the host's volume id and where the guest sees it. */
export interface HostVolumeAttachment {
  id: string;
  name: string;
  mount_path: string;
  read_only: boolean;
}

/** What a new sandbox is restored from instead of its template's baked snapshot. */
export type SandboxSource =
  /** A snapshot in the snapshot store (fetched first if this host lacks it). */
  | { kind: 'snapshot'; snapshot_id: string }
  /** A capture this host holds (see `HostSandboxApi.capture`): fork children. */
  | { kind: 'capture'; capture_id: string };

export interface HostCreateRequest {
  id: string;
  /** Its template: the sizes default to and are bounded by the template's. */
  template: string;
  /** Restore this instead of the template's snapshot. */
  from?: SandboxSource;
  cpu?: number;
  memory_mb?: number;
  /** Size limit of the sandbox's written files (where the runtime can limit it). */
  disk_mb?: number;
  volumes?: HostVolumeAttachment[];
  env: Record<string, string>;
  network?: SandboxNetwork;
  /** Stop every process the image brought along before the sandbox is handed out (disk-only fork). */
  reset_processes?: boolean;
}

/** The sizes a sandbox got: the request's, or its template's defaults. */
export interface HostSandboxSizing {
  cpu: number;
  memory_mb: number;
  disk_mb: number;
}

/** Where a create's time went on its host, in milliseconds, in order. */
export interface HostCreatePhases {
  /** The source resolved (a snapshot fetched from the store), memory admitted, the channel opened. */
  prepare: number;
  /** The sandbox's disk made and mounted, with its volumes. */
  disk: number;
  /** The runtime's restore of the image. */
  restore: number;
  /** From the end of the restore until the guest agent dialed in (0 if it dialed in before). */
  connect: number;
  /** The agent's hello: its identity, env and egress settings. */
  hello: number;
  /** Volumes mounted in the guest, processes the image brought along stopped. */
  finish: number;
}

/** A created sandbox: its sizes, and where the create's time went. */
export interface HostCreateResult extends HostSandboxSizing {
  phases_ms: HostCreatePhases;
}

export interface HostCapabilities {
  /** Running sandboxes can be saved to an image and copies restored from it. */
  checkpoint: boolean;
  pause: boolean;
  /** Written files are kept on a size-limited disk, so volumes can be attached. */
  disk_limit: boolean;
  /** Sandboxes reach the outside through the host's egress proxy. */
  egress: boolean;
  /**
   * How a volume is copied (a database branch): `reflink` shares its blocks
   * (milliseconds whatever its size), `copy` copies them.
   */
  volume_clone: 'reflink' | 'copy';
}

export interface HostInfo {
  id: string;
  driver: string;
  runtime_version: string;
  capabilities: HostCapabilities;
}

export interface HostCapacity {
  memory_budget_mb: number;
  memory_reserved_mb: number;
  /** memory_mb of the live sandboxes may add up to budget x this. */
  memory_overcommit?: number;
  /** What a sandbox counts at in admission until it is measured, in MiB. */
  memory_start_mb?: number;
  sandboxes: number;
  /** Memory the live sandboxes use now, as the kernel charges it (absent when the host cannot tell). */
  memory_used_mb?: number;
}

/**
 * What a live sandbox has used, as its host measures it. The counters
 * (CPU, network) count from `started_at`, when the runtime last started the
 * sandbox: a wake or a restart of the agent starts them again from 0.
 */
export interface HostSandboxUsage {
  /** When the counters started (ISO 8601). */
  started_at: string;
  /** CPU time since started_at, in seconds; null when the runtime does not tell. */
  cpu_seconds: number | null;
  /** Memory charged to the sandbox now (cgroup memory.current), in bytes; null when unknown. */
  memory_bytes: number | null;
  /** Bytes used on the sandbox's disk (its written files); null when it has no disk of its own. */
  disk_bytes: number | null;
  /** Bytes relayed into the sandbox over its egress connections since started_at. */
  net_rx_bytes: number;
  /** Bytes relayed out of the sandbox over its egress connections since started_at. */
  net_tx_bytes: number;
}

/** A sandbox the control plane believes runs on this host (reconciliation after a restart). */
export interface HostExpectedSandbox {
  id: string;
  memory_mb: number;
  env: Record<string, string>;
  network?: SandboxNetwork;
  paused?: boolean;
}

export interface HostSandboxApi {
  /**
   * Restores a new sandbox: checks its template (TEMPLATE_NOT_FOUND,
   * TEMPLATE_NOT_READY), sizes (RESOURCES_OUT_OF_RANGE) and network policy
   * (INVALID_NETWORK_POLICY), admits it (INSUFFICIENT_CAPACITY) and starts it.
   * On failure nothing is left.
   */
  create(req: HostCreateRequest): Promise<HostCreateResult>;
  /** Stops a sandbox at once and releases what it held; safe to repeat. */
  destroy(id: string): Promise<void>;
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  /** Saves it all to this host's disk and stops it; with image_id, also into the snapshot store. */
  hibernate(id: string, o?: { image_id?: string }): Promise<{ shared: boolean }>;
  /** Restores a hibernated sandbox with its (possibly changed) env and network. */
  wake(id: string, o: { env: Record<string, string>; network?: SandboxNetwork }): Promise<void>;
  /** Captures a running sandbox for forks; it goes on running. Release the capture when done. */
  capture(id: string): Promise<{ capture_id: string; paused_ms: number }>;
  releaseCapture(captureId: string): Promise<void>;
  /** Captures a running sandbox into the snapshot store under `snapshotId`; it goes on running. */
  snapshot(id: string, snapshotId: string): Promise<{ size_bytes: number; paused_ms: number }>;
  /** Sandboxes of this host whose runtime is running or paused (one that died is missing). */
  live(): Promise<string[]>;
  /** CPU time the sandbox has used, in nanoseconds (null when unknown or not running here). */
  cpuUsageNs(id: string): Promise<number | null>;
  /**
   * Whether the host's OOM killer killed a process of the sandbox (its
   * runtime, for gVisor) since it started; false when unknown. Read it
   * before destroy, which removes what it is read from.
   */
  oomKilled(id: string): Promise<boolean>;
  /** What a sandbox has used (CPU, memory, disk, network); null when it is not live here. */
  usage(id: string): Promise<HostSandboxUsage | null>;
  /**
   * Asks the host to take back what it can of a live sandbox's memory without
   * touching its processes (cgroup reclaim of cache; a lower soft limit, so
   * the kernel takes from it first). Returns the MiB freed; null when unknown.
   */
  reclaim(id: string): Promise<number | null>;
  /** Throws INVALID_NETWORK_POLICY for a policy (or secrets) this host cannot enforce. */
  checkNetwork(network: SandboxNetwork): Promise<void>;
  /** Changes the egress policy of a running or paused sandbox; open connections stay. */
  setNetwork(id: string, network: SandboxNetwork): Promise<void>;
  /** A raw byte stream to a TCP port on the sandbox's loopback (or to the Unix socket `options.unix` in it); PORT_NOT_LISTENING if none. */
  openPort(id: string, port: number, options?: OpenPortOptions): Promise<Duplex>;
  /**
   * After a restart: takes back the expected sandboxes that still run and
   * removes what nobody expects. Returns the ids that could not be recovered.
   */
  reconcile(expected: HostExpectedSandbox[], hibernated: string[]): Promise<string[]>;
}

export interface ExecOptions {
  /** Aborting before the process exits kills it and ends the events. */
  signal?: AbortSignal;
}

export interface HostProcessApi {
  /** Starts a process and yields its events: start, stdout, stderr, exit. Start errors throw. */
  exec(id: string, start: GuestProcessStart, o?: ExecOptions): Promise<AsyncIterable<ExecEvent>>;
  /** Starts a background process and returns at once. */
  start(id: string, start: GuestProcessStart): Promise<ProcessInfo>;
  list(id: string): Promise<ProcessInfo[]>;
  get(id: string, pid: number): Promise<ProcessInfo>;
  /** Replays buffered output, then (with follow) live output until exit. Aborting does not kill. */
  output(
    id: string,
    pid: number,
    o: { follow: boolean; signal?: AbortSignal },
  ): Promise<AsyncIterable<ExecEvent>>;
  writeStdin(id: string, pid: number, req: StdinRequest): Promise<void>;
  signal(id: string, pid: number, req: SignalRequest): Promise<void>;
}

/** What an attached viewer hears from a terminal session. */
export interface PtyAttachHandlers {
  /** First: the output offset of the first byte onData gets (a reconnect passes it back as `since`). */
  onStart?(offset: number): void;
  /** Terminal output: the scrollback first, then live bytes. */
  onData(data: Buffer): void;
  /** The process exited; the attachment ends right after. */
  onExit(status: { exit_code: number; signal: string | null }): void;
  /**
   * The attachment is over: after the exit, or because the sandbox's agent
   * went away (a pause, hibernate or capture: the session lives on, attach again).
   */
  onEnd(): void;
}

export interface PtyAttachment {
  write(data: Buffer): void;
  /** Detaches (the session goes on). */
  close(): void;
}

export interface HostPtyApi {
  create(id: string, start: GuestPtyStart): Promise<PtyInfo>;
  list(id: string): Promise<PtyInfo[]>;
  /** PTY_NOT_FOUND when there is no such session. */
  get(id: string, ptyId: string): Promise<PtyInfo>;
  resize(id: string, ptyId: string, size: { cols: number; rows: number }): Promise<PtyInfo>;
  /** Kills the session's process group and forgets the session. */
  kill(id: string, ptyId: string): Promise<void>;
  /** With `since`, the replay starts at that output offset (what the viewer has not seen yet). */
  attach(
    id: string,
    ptyId: string,
    handlers: PtyAttachHandlers,
    o?: { since?: number },
  ): Promise<PtyAttachment>;
}

/** The code interpreter of a sandbox (docs/code-interpreter.md). */
export interface HostCodeApi {
  /**
   * Runs code; yields start, then stdout, stderr, result and error events, then
   * end. Aborting `signal` before the end interrupts the run. Errors before
   * the start throw (CONTEXT_NOT_FOUND, INTERPRETER_UNAVAILABLE).
   */
  run(id: string, req: CodeRunRequest, o?: ExecOptions): Promise<AsyncIterable<CodeEvent>>;
  createContext(id: string, req: CodeContextCreateRequest): Promise<CodeContext>;
  listContexts(id: string): Promise<CodeContext[]>;
  /** A fresh interpreter for the context (its state is gone); CONTEXT_NOT_FOUND if none. */
  restartContext(id: string, contextId: string): Promise<CodeContext>;
  deleteContext(id: string, contextId: string): Promise<void>;
  /** Interrupts a running execution; EXECUTION_NOT_FOUND when none of that id runs. */
  interrupt(id: string, executionId: string): Promise<void>;
}

export interface HostFileApi {
  read(id: string, path: string): Promise<{ size: number; stream: Readable }>;
  write(id: string, path: string, body: Readable, mode?: string): Promise<WriteResult>;
  list(id: string, path: string): Promise<FileList>;
  stat(id: string, path: string): Promise<FileInfo>;
  mkdir(id: string, req: MkdirRequest): Promise<FileInfo>;
  rename(id: string, req: RenameRequest): Promise<FileInfo>;
  remove(id: string, path: string, recursive: boolean): Promise<void>;
  /**
   * Watches a directory; errors before the first event throw (FILE_NOT_FOUND,
   * NOT_A_DIRECTORY). The events end when `signal` aborts (the guest drops its
   * watchers) or when the sandbox's agent goes away (a pause or checkpoint).
   */
  watch(
    id: string,
    path: string,
    o: { recursive: boolean; signal?: AbortSignal },
  ): Promise<AsyncIterable<FileWatchEvent>>;
}

export interface VolumeCreateOptions {
  journal?: boolean;
  seed?: { template: string; from: string; to: string };
  unpack?: { key: string; to: string }; // an archived .tar.gz; `<to>`: 0700, owned as its entries
  fetch?: { keys: string[]; to: string }; // archived objects, each as `<to>/<last part of its key>`
}

export interface HostVolumeApi {
  /**
   * Makes a volume's file system; INSUFFICIENT_CAPACITY when the host's disk cannot hold it.
   * `journal` for data that must survive a host crash (databases). `seed` copies a directory of
   * a template's root (owners and modes kept), `unpack` an archived tar, as `<to>` at the top of
   * what sandboxes see; `fetch` copies archived objects into a directory `<to>` there (0755, its
   * files 0644, owned by root): done by the host, at the speed of the host's disk.
   */
  create(id: string, sizeMb: number, o?: VolumeCreateOptions): Promise<void>;
  remove(id: string): Promise<void>;
  usedBytes(id: string): Promise<number>;
  /** Mounts a volume that is not mounted (after a reboot). */
  mount(id: string): Promise<void>;
  /**
   * Makes `to` a copy of `from` as of one instant (its file system frozen while its blocks are
   * copied: writers wait), crash consistent; on failure `to` does not exist. `clear`: paths
   * relative to what sandboxes see, emptied in the copy (a file removed, a directory's entries).
   */
  clone(from: string, to: string, o?: { clear?: string[] }): Promise<void>;
}

export interface HostSnapshotApi {
  delete(snapshotId: string): Promise<void>;
}

/** An object in the archive (WAL segments, base backups). */
export interface ArchivedObject {
  key: string;
  size: number;
}

/**
 * The archive: durable objects kept in the snapshot store's backend (a local
 * directory, or the S3 bucket), written and read by the host on a sandbox's
 * behalf so the sandbox holds no storage credentials. Keys are `/`-separated.
 */
export interface HostArchiveApi {
  /**
   * Moves every finished file of a directory in a sandbox into the archive
   * under `prefix` (files ending in `.tmp` are being written and are left),
   * removing each from the sandbox once it is stored. With a fence, the
   * object at `fence.key` must hold `fence.value`, or nothing is moved
   * (DATABASE_FENCED): a copy that an epoch change left behind cannot archive.
   */
  collect(
    sandboxId: string,
    dir: string,
    prefix: string,
    fence?: { key: string; value: string },
  ): Promise<ArchivedObject[]>;
  /** Stores a sandbox's file under key. */
  upload(sandboxId: string, path: string, key: string): Promise<ArchivedObject>;
  /** Stores a small object (fences, markers). */
  put(key: string, body: string): Promise<void>;
  /** A small object's text, or null when there is none. */
  get(key: string): Promise<string | null>;
  /** Objects whose key starts with prefix, sorted by key. */
  list(prefix: string): Promise<ArchivedObject[]>;
  /** Removes every object whose key starts with prefix. */
  remove(prefix: string): Promise<void>;
}

export interface HostApi {
  readonly id: string;
  info(): Promise<HostInfo>;
  capacity(): Promise<HostCapacity>;
  readonly sandboxes: HostSandboxApi;
  readonly processes: HostProcessApi;
  readonly pty: HostPtyApi;
  readonly code: HostCodeApi;
  readonly files: HostFileApi;
  readonly templates: HostTemplateApi;
  readonly volumes: HostVolumeApi;
  readonly snapshots: HostSnapshotApi;
  readonly archive: HostArchiveApi;
  /** Closes channels; with destroy, also removes every sandbox and unmounts volumes. */
  close(o?: { destroy?: boolean }): Promise<void>;
}

/** Largest template image upload; larger bodies are cut off with PAYLOAD_TOO_LARGE. */
export const TEMPLATE_UPLOAD_LIMIT = 16 * 1024 ** 3;
