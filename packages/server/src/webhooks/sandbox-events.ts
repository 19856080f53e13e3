/**
 * sandbox.created and sandbox.state_changed, from the state changes the
 * store records (every change goes through Store.setState). A sandbox is
 * reported created when it first runs: one whose start failed leaves no
 * record and no event. `stopping` is a step on the way to `stopped` and is
 * not reported.
 */
import type { SandboxStateChange, Store } from '../store/store';
import { causeOf, currentRequest } from './cause';
import type { DispatchLog } from './dispatcher';
import type { WebhookService } from './service';

/** The state as webhooks name it: a wake is `woken`, a sandbox gone from its host `lost`. */
export function reportedState(change: SandboxStateChange): string | null {
  if (change.to_state === 'stopping' || change.to_state === 'creating') return null;
  if (change.to_state === 'running' && change.cause.startsWith('wake')) return 'woken';
  if (change.to_state === 'stopped' && change.cause === 'lost') return 'lost';
  return change.to_state;
}

export function sandboxEvents(store: Store, webhooks: WebhookService, log: DispatchLog): void {
  store.onSandboxStateChange = async (change) => {
    const state = reportedState(change);
    if (!state) return;
    try {
      const sbx = await store.getSandboxById(change.sandbox_id);
      if (!sbx) return;
      const cause = causeOf(change.cause, currentRequest());
      const sandbox = {
        id: sbx.id,
        template: sbx.template,
        metadata: sbx.metadata,
        parent_id: sbx.parent_id,
      };
      if (change.from_state === 'creating' && change.to_state === 'running')
        await webhooks.emit(sbx.org_id, 'sandbox.created', { sandbox, cause });
      await webhooks.emit(sbx.org_id, 'sandbox.state_changed', {
        sandbox,
        state,
        from_state: change.from_state,
        to_state: change.to_state,
        cause,
        at: change.at,
      });
    } catch (err) {
      log.warn({ err, sandbox: change.sandbox_id }, 'sandbox webhook event not recorded');
    }
  };
}
