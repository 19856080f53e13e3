/**
 * The REST contract, declared once as TypeBox schemas. The server validates
 * requests with them, the OpenAPI document is generated from them, and the SDK
 * takes its types from them. One module per resource under ./api; this barrel
 * keeps every name importable from here.
 */
export * from './api/common';
export * from './api/sandboxes';
export * from './api/snapshots';
export * from './api/volumes';
export * from './api/exec';
export * from './api/files';
export * from './api/templates';
export * from './api/health';
export * from './api/databases';
export * from './api/keys';
export * from './api/audit';
export * from './api/usage';
export * from './api/quotas';
export * from './api/webhooks';
export * from './api/pty';
export * from './api/lsp';

export type { Static, TSchema } from '@sinclair/typebox';
export * from './api/code';
export * from './api/hosts';
