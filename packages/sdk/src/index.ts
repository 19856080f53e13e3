/**
 * @warren/sdk: a small TypeScript client for the Warren REST API
 * (`Sandbox.create()`, `sandbox.commands.run()`, `sandbox.files.write()`).
 */
export { Sandbox } from './sandbox';
export type {
  SandboxCreateOptions,
  SandboxListOptions,
  SandboxPage,
  SandboxPageOptions,
} from './sandbox';
export { Commands, toExecRequest } from './commands';
export type { RunOptions } from './commands';
export { CommandHandle } from './command-handle';
export type { CommandResult, OutputHandlers } from './result';
export { Processes } from './processes';
export type { Signal } from './processes';
export { Files } from './files';
export { Pty, PtyConnection } from './pty';
export type { PtyClose, PtyConnectOptions, PtyCreateOptions } from './pty';
export { Code } from './code';
export type { CodeError, CodeResult, Execution, RunCodeOptions } from './code';
export { Lsp } from './lsp';
export type { LspCallOptions, LspConnection, LspConnectOptions } from './lsp';
export { Network } from './network';
export type { EgressLogOptions } from './network';
export type { WatchHandle, WatchOptions, WriteData, WriteOptions } from './files';
export {
  listTemplates,
  getTemplate,
  buildTemplate,
  uploadTemplateImage,
  rebuildTemplate,
  deleteTemplate,
} from './templates';
export type { BuildOptions } from './templates';
export { Volumes } from './volumes';
export { Keys, Organisations, SCOPES, type CreateKeyOptions } from './keys';
export { Audit } from './audit';
export { Hosts, type Host, type HostJoinToken } from './hosts';
export type { AuditPage } from './audit';
export { Quotas, type OrganisationQuotas, type QuotaOverrides } from './quotas';
export { Webhooks, WEBHOOK_EVENT_TYPES } from './webhooks';
export { Database } from './databases';
export type { DatabaseEvent } from './databases';
export { getHealth } from './health';
export { getUsage } from './usage';
export type { MetricsOptions, TimeInput, UsageOptions } from './usage';
export { HttpClient } from './client';
export type { RequestOptions } from './client';
export { resolveConfig, tokenFilePath, warrenHome, DEFAULT_API_URL } from './config';
export type { ConnectionOptions, ResolvedConfig } from './config';
export { parseNdjson } from './ndjson';
export { WarrenConnectionError, errorFromResponse } from './errors';
export type { ApiError } from './errors';

export { WarrenError, ERROR_STATUS, isErrorCode } from '@warren/protocol';
export type {
  ErrorCode,
  Sandbox as SandboxInfo,
  SandboxState,
  CreateSandboxRequest,
  UpdateSandboxRequest,
  ExecRequest,
  ExecResult,
  ExecEvent,
  ProcessInfo,
  PtyInfo,
  PtyToken,
  CodeContext,
  CodeEvent,
  CodeLanguage,
  FileInfo,
  FileWatchEvent,
  WriteResult,
  Template,
  TemplateBuildRequest,
  TemplateImageQuery,
  RecipeStep,
  ReadyProbe,
  Health,
  NetworkPolicy,
  NetworkUpdate,
  NetworkView,
  EgressSecret,
  EgressEvent,
  Volume,
  VolumeAttachment,
  ApiKey,
  CreatedKey,
  Organisation,
  Scope,
  Database as DatabaseInfo,
  DatabaseState,
  CreateDatabaseRequest,
  RestoreDatabaseRequest,
  BranchDatabaseRequest,
  SandboxMetrics,
  UsageReport,
  UsageGroup,
  UsageSample,
  UsageFigures,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookDelivery,
  UpdateWebhookRequest,
} from '@warren/protocol';
