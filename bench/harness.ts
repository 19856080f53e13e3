/** Both sides of a benchmark run and the operations every row group uses on them. */
import type { TestPlatform } from '../test/fixture';
import type { Direct } from './direct';
import { now } from './stats';

export interface Harness {
  p: TestPlatform;
  direct: Direct;
  /** Creates a `base` sandbox through the API and runs `true` in it: [ms, sandbox id]. */
  createExec(): Promise<[number, string]>;
  /** Deletes sandboxes through the API and waits for the host agent to settle. */
  deleteAll(ids: string[]): Promise<void>;
  /** Destroys containers started directly with runsc. */
  destroyDirect(ids: string[]): Promise<void>;
}

export function harness(p: TestPlatform, direct: Direct): Harness {
  const createExec = async () => {
    const t = now();
    const sbx = await p.json<{ id: string }>('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'base' },
    });
    await p.json(`/v1/sandboxes/${sbx.id}/exec`, { method: 'POST', json: { cmd: 'true' } });
    return [now() - t, sbx.id] as [number, string];
  };
  const deleteAll = async (ids: string[]) => {
    for (const id of ids) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    await p.host.settle();
  };
  const destroyDirect = async (ids: string[]) => {
    for (const id of ids) await direct.driver.destroy(id);
  };
  return { p, direct, createExec, deleteAll, destroyDirect };
}
