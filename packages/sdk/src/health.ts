/** The unauthenticated health check: is the platform up, and with what capacity. */
import type { Health } from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

export function getHealth(opts: ConnectionOptions = {}): Promise<Health> {
  return new HttpClient(opts).json('GET', '/v1/health');
}
