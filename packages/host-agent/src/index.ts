/**
 * The host agent: owns the sandboxes of one host. The control plane reaches
 * it only through HostApi (@warren/protocol), made by createHostAgent.
 */
export { createHostAgent, type LocalHostAgent } from './agent';
export type { HostAgentConfig } from './config';
export type { DriverName } from './runtime';
export type { S3StoreConfig } from './snapshots';
export { ARCHIVE_SCRIPT, NAP_FIFO, PG_BIN, SEED_DIR } from './templates/postgres-root';
export { serveHostApi, type ServeHostOptions, type ServedHost } from './remote/serve';
