export { HostAgent, type HostAgentConfig, type CreateOnHost } from './host-agent';
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
export type { TemplateBuildSpec, BuildProgress } from './templates/builder';
