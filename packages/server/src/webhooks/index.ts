/** Webhooks of a platform: the service, with sandbox state changes wired to it. */
import type { Config } from '../config';
import type { Store } from '../store/store';
import type { DispatchLog } from './dispatcher';
import { sandboxEvents } from './sandbox-events';
import { WebhookService } from './service';

export { WebhookService };

export function createWebhooks(store: Store, config: Config, log: DispatchLog): WebhookService {
  const webhooks = new WebhookService(
    store,
    {
      retryScale: config.webhookRetryScale,
      timeoutMs: config.webhookTimeoutMs,
      disableAfterMs: config.webhookDisableAfterSeconds * 1000,
      secretGraceMs: config.webhookSecretGraceSeconds * 1000,
      pollMs: 1000,
      retentionMs: 30 * 24 * 3600_000,
    },
    log,
  );
  sandboxEvents(store, webhooks, log);
  return webhooks;
}
