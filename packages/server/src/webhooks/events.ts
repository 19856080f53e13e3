/** Helpers for routes that report events: template builds, snapshots, databases. */
import { WarrenError, type Database, type Template } from '@warren/protocol';
import { requestCause } from './cause';
import type { DispatchLog } from './dispatcher';
import type { WebhookService } from './service';

type Progress = (line: string, step?: number) => void;

/**
 * Runs a build and reports template.built, or template.failed when a build
 * that had started (logged a line) fails; a request refused before building
 * (bad name, unknown base) is only an HTTP error. The result is unchanged.
 */
export function reportBuild(
  webhooks: WebhookService,
  log: DispatchLog,
  orgId: string,
  name: string,
  build: (progress: Progress) => Promise<Template>,
): (progress: Progress) => Promise<Template> {
  const cause = requestCause('template build');
  return (progress) => {
    let started = false;
    return build((line, step) => {
      started = true;
      progress(line, step);
    }).then(
      (template) => {
        webhooks.emitQuietly(orgId, 'template.built', { template, cause }, log);
        return template;
      },
      (err: unknown) => {
        if (started) {
          const error = {
            code: err instanceof WarrenError ? err.code : 'INTERNAL',
            message: err instanceof Error ? err.message : String(err),
          };
          webhooks.emitQuietly(orgId, 'template.failed', { template: { name }, error, cause }, log);
        }
        throw err;
      },
    );
  };
}

/** database.created / database.restored: the record without its credentials. */
export function reportDatabase(
  ctx: { webhooks: WebhookService },
  req: { principal: { orgId: string } | null; log: DispatchLog },
  type: 'database.created' | 'database.restored',
  db: Database,
  extra: Record<string, unknown> = {},
): void {
  const { password: _password, connection_url: _url, pooled_url: _pooled, ...database } = db;
  ctx.webhooks.emitQuietly(
    req.principal!.orgId,
    type,
    { database, ...extra, cause: requestCause(type) },
    req.log,
  );
}
