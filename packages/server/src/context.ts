import type { HostApi } from '@warren/protocol';
import type { AuditService } from './audit-service';
import type { Config } from './config';
import type { Databases } from './databases';
import type { HostService } from './hosts/service';
import type { KeyService } from './keys/service';
import type { Metrics } from './metrics/registry';
import type { SandboxCreator } from './sandboxes/create';
import type { SandboxGuest } from './sandboxes/guest';
import type { SandboxLifecycle } from './sandboxes/lifecycle';
import type { QuotaService } from './quotas/service';
import type { NetworkService } from './sandboxes/network';
import type { SnapshotService } from './sandboxes/snapshots';
import type { Store } from './store/store';
import type { TemplateService } from './template-service';
import type { UsageService } from './usage/service';
import type { VolumeService } from './volume-service';
import type { WebhookService } from './webhooks/service';

/**
 * What route modules need; built once in platform.ts. Routes call the
 * services; the services reach the host through HostApi and the store.
 */
export interface AppContext {
  config: Config;
  /** For authentication only: routes go through the services. */
  store: Store;
  audit: AuditService;
  keys: KeyService;
  /** Every host reached, behind one HostApi (hosts/router.ts). */
  host: HostApi;
  hosts: HostService;
  sandboxes: SandboxLifecycle;
  creator: SandboxCreator;
  snapshots: SnapshotService;
  guest: SandboxGuest;
  network: NetworkService;
  volumes: VolumeService;
  templates: TemplateService;
  databases: Databases;
  /** Prometheus metrics of this platform (GET /metrics). */
  metrics: Metrics;
  usage: UsageService;
  quotas: QuotaService;
  /** Webhook endpoints, and `emit(orgId, type, data)` for anything that has an event to report. */
  webhooks: WebhookService;
  version: string;
  startedAt: number;
}
