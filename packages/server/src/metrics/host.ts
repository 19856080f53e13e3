/**
 * Counting at the HostApi boundary: every sandbox start (API creates, forks,
 * restores from snapshots, databases) and every wake passes here, whoever
 * asked for it. The host's sandbox calls are wrapped in place, once, when the
 * platform starts; they behave as before. Before a destroy or a hibernate the
 * sandbox's usage is sampled a last time, while its host still counts it.
 */
import { WarrenError, type HostApi } from '@warren/protocol';
import type { UsageSampler } from '../usage/sampler';
import type { Metrics } from './registry';

function resultOf(err: unknown): string {
  return err instanceof WarrenError ? err.code : 'INTERNAL';
}

export function instrumentHost(host: HostApi, metrics: Metrics, usage: UsageSampler): void {
  const s = host.sandboxes;
  const create = s.create.bind(s);
  const wake = s.wake.bind(s);
  const destroy = s.destroy.bind(s);
  const hibernate = s.hibernate.bind(s);
  s.create = async (req) => {
    const source = req.from?.kind ?? 'template';
    const started = performance.now();
    try {
      const created = await create(req);
      const seconds = (performance.now() - started) / 1000;
      metrics.sandboxCreate(source, 'ok', seconds, { ...created.phases_ms });
      return created;
    } catch (err) {
      metrics.sandboxCreate(source, resultOf(err), (performance.now() - started) / 1000);
      throw err;
    }
  };
  s.wake = async (id, o) => {
    try {
      await wake(id, o);
      metrics.sandboxRestore('ok');
    } catch (err) {
      metrics.sandboxRestore(resultOf(err));
      throw err;
    }
  };
  s.destroy = async (id) => {
    await usage.sample(id);
    await destroy(id);
  };
  s.hibernate = async (id, o) => {
    await usage.sample(id);
    return hibernate(id, o);
  };
}
