/**
 * The contract between the host agent and the guest agent inside a sandbox.
 *
 * The guest agent dials out to a Unix socket that the host agent listens on
 * (bind-mounted into the sandbox) and then serves HTTP/2 over that connection:
 * the host is the HTTP/2 client. HTTP/2 gives multiplexed streams with flow
 * control, so exec streams and 100 MB file transfers share one connection
 * without buffering. Because the guest dials, a sandbox restored from a
 * checkpoint simply dials again: the agent drops the connection before a
 * checkpoint (gVisor cannot save an open host socket) and redials afterwards.
 */
import type { ExecEvent, FileInfo, FileWatchEvent, ProcessInfo } from './api';

/** Where the guest agent and its private Node.js runtime are mounted, read-only. */
export const GUEST_AGENT_DIR = '/opt/warren';
/**
 * A library a server in the sandbox is started with (LD_PRELOAD) to take
 * connections from the host by descriptor: guest-agent/native/handoff.c.
 */
export const GUEST_HANDOFF_LIBRARY = `${GUEST_AGENT_DIR}/handoff.so`;
/**
 * Where a sandbox's volumes appear, one directory per volume name. It is a
 * mount in every template snapshot (a restore cannot add mounts), backed by a
 * per-sandbox host directory that holds bind mounts of the attached volumes.
 */
export const GUEST_VOLUMES_DIR = '/run/warren/volumes';
/** Directory in the guest that holds the host's channel socket. */
export const GUEST_CHANNEL_DIR = '/run/warren';
export const GUEST_CHANNEL_SOCKET = 'agent.sock';
/**
 * Bulk file data does not ride the HTTP/2 connection: under gVisor a raw
 * socket moves bytes several times faster. For each transfer the guest dials
 * this second socket and first sends the transfer's token and a newline.
 */
export const GUEST_DATA_SOCKET = 'data.sock';
export const DATA_TOKEN_BYTES = 32;

/** HTTP/2 settings of the channel, both ends: big flow-control windows and frames. */
export const CHANNEL_SETTINGS = {
  initialWindowSize: 16 * 1024 * 1024,
  maxFrameSize: 1024 * 1024 - 1,
};
/** Connection-level window (HTTP/2 keeps it separate from the per-stream one). */
export const CHANNEL_WINDOW = 64 * 1024 * 1024;

export const GUEST_PATHS = {
  health: '/health',
  hello: '/hello',
  prepareCheckpoint: '/prepare-checkpoint',
  /** Kill every process but the agent's own: a disk-only fork starts with none of the parent's. */
  reset: '/reset',
  processes: '/processes',
  files: '/files',
  /** Upload: the guest dials a data connection and writes what arrives to the file. */
  filesReceive: '/files/receive',
  /** Download: the guest dials a data connection and sends the file over it. */
  filesSend: '/files/send',
  filesList: '/files/list',
  filesStat: '/files/stat',
  filesMkdir: '/files/mkdir',
  filesRename: '/files/rename',
  /** ndjson stream of FileWatchEvent until the host closes it (the watchers go with it). */
  filesWatch: '/files/watch',
  /** Preview: the guest connects to a TCP port on its loopback and pipes it over a data connection. */
  portConnect: '/ports/connect',
  /** Links each attached volume at its mount path (symlinks into GUEST_VOLUMES_DIR). */
  volumes: '/volumes',
  /** Terminal sessions: /pty, /pty/<id>, /pty/<id>/resize, /pty/<id>/attach. */
  pty: '/pty',
  /**
   * The code interpreter: /code/run (ndjson of CodeEvent), /code/contexts,
   * /code/contexts/<id>, /code/contexts/<id>/restart, /code/executions/<id>.
   */
  code: '/code',
} as const;

/** Sent by the host after every (re)connection: who the sandbox is now. */
export interface GuestHello {
  sandbox_id: string;
  env: Record<string, string>;
  /** Egress proxies in the sandbox: see GuestEgress. */
  egress?: GuestEgress;
  /**
   * The template's environment and working directory, sent only by the hello of
   * a template bake: the agent keeps them, so every copy restored from the
   * snapshot has them, under each sandbox's own env.
   */
  defaults?: { env: Record<string, string>; cwd?: string; user?: string };
}

/**
 * The guest agent listens on these loopback ports inside the sandbox and
 * relays every connection to the host over a data connection that starts
 * with `token` (see GUEST_DATA_SOCKET); the host-side proxy applies the
 * sandbox's egress policy. `ca_pem` is the CA the host-side proxy signs with
 * when it terminates TLS to inject a secret: the sandbox trusts it.
 */
export interface GuestEgress {
  token: string;
  ca_pem: string;
}

export const EGRESS_HTTP_PORT = 3128;
export const EGRESS_SOCKS_PORT = 1080;

/** One attached volume, as the guest links it. */
export interface GuestVolume {
  name: string;
  mount_path: string;
  read_only: boolean;
}

export interface GuestHealth {
  ok: true;
  sandbox_id: string | null;
  pid: number;
  uptime_ms: number;
  connections: number;
}

export interface DataTransfer {
  path: string;
  token: string;
  mode?: string;
}

/** Connect to 127.0.0.1:<port> (or `unix`) in the sandbox and pipe that connection over a data connection. */
export interface PortConnect {
  port: number;
  token: string;
  /**
   * A Unix socket in the sandbox whose server takes connections by
   * descriptor (guest-agent/native/handoff.c): the data connection is handed
   * to it and its bytes skip the relay. The port is used if nothing listens
   * there.
   */
  handoff?: string;
  /**
   * Connect to this Unix socket in the sandbox instead of the port (the
   * platform's own connections to a server that trusts local users).
   */
  unix?: string;
}

/** How a port connection reaches the server in the sandbox (HostApi's openPort). */
export type OpenPortOptions = Pick<PortConnect, 'handoff' | 'unix'>;

export interface GuestProcessStart {
  cmd: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
  stdin?: string;
  timeout_ms?: number;
  /** Keep the process (and its output) listed after the response ends. */
  background?: boolean;
  /** Run as this user: "root", a name, "uid", "uid:gid" or "name:group" (default root). */
  user?: string;
}

/** A terminal session to start (see PtyCreateRequest; the host fills in the defaults). */
export interface GuestPtyStart {
  cols: number;
  rows: number;
  cmd?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  user?: string;
  /** Seconds without a viewer before the session is killed. */
  idle_timeout: number;
}

/**
 * POST /pty/<id>/attach is one HTTP/2 stream both ways: the request body is
 * the viewer's input, raw; the response is frames of u8 type | u32 LE length |
 * payload: START, OUTPUT (terminal bytes, the scrollback first, from
 * ?since=<offset> when given) and EXIT (JSON {exit_code, signal}, the last frame).
 */
export const PTY_FRAME_OUTPUT = 1;
export const PTY_FRAME_EXIT = 2;
/** The first frame: JSON {offset}, the output offset of the first OUTPUT byte that follows. */
export const PTY_FRAME_START = 3;
export const PTY_FRAME_HEADER = 5;

export type { ExecEvent, FileInfo, FileWatchEvent, ProcessInfo };
