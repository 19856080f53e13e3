export {
  HostAgent,
  type HostAgentConfig,
  type CreateOnHost,
  type SandboxNetwork,
} from './host-agent';
export { EgressProxy, type EgressRecord } from './network/egress-proxy';
export { EgressCa } from './network/ca';
export { Resolver } from './network/resolver';
export { AddressGuard, parseCidrList } from './network/addresses';
export { BUILTIN_PRESETS } from './network/presets';
export {
  GuestChannel,
  errorFrom,
  readText,
  type GuestResponse,
  type GuestRequest,
} from './channel';
export type { RuntimeDriver, DriverCapabilities, SandboxSpec } from './runtime/driver';
export { createDriver, type DriverName } from './runtime';
export { BUILTIN_TEMPLATES, type TemplateRecord } from './templates/catalog';
export {
  createSnapshotStore,
  LocalSnapshotStore,
  S3SnapshotStore,
  type SnapshotStore,
  type SnapshotManifest,
  type S3StoreConfig,
} from './snapshots';
export type { HostVolume } from './storage/sandbox-disk';
export { HostVolumes } from './storage/host-volumes';
export type { TemplateBuildSpec, BuildProgress } from './templates/builder';
