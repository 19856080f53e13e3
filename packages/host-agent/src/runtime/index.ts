import type { RuntimeDriver } from './driver';
import { FakeDriver } from './fake/driver';
import { GvisorDriver } from './gvisor/driver';

export type DriverName = 'gvisor' | 'fake';

/** The one place that knows the concrete drivers. */
export function createDriver(
  name: DriverName,
  opts: { runsc: string; stateDir: string },
): RuntimeDriver {
  switch (name) {
    case 'gvisor':
      return new GvisorDriver({ binary: opts.runsc, stateDir: opts.stateDir });
    case 'fake':
      return new FakeDriver();
  }
}
