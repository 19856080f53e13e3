/** Hosts of the install (its admin only): join tokens, listing, drain, remove. See docs/multi-host.md. */
import type { Host, HostJoinToken } from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

export type { Host, HostJoinToken };

const path = (id: string) => `/v1/hosts/${encodeURIComponent(id)}`;

export const Hosts = {
  /** A one-use token for `warren agent --join-token` (valid `ttlSeconds`, default an hour). */
  joinToken(ttlSeconds?: number, opts: ConnectionOptions = {}): Promise<HostJoinToken> {
    return new HttpClient(opts).json('POST', '/v1/hosts/join-tokens', {
      json: ttlSeconds === undefined ? {} : { ttl_seconds: ttlSeconds },
    });
  },
  async list(opts: ConnectionOptions = {}): Promise<Host[]> {
    return (await new HttpClient(opts).json<{ hosts: Host[] }>('GET', '/v1/hosts')).hosts;
  },
  get(id: string, opts: ConnectionOptions = {}): Promise<Host> {
    return new HttpClient(opts).json('GET', path(id));
  },
  drain(id: string, opts: ConnectionOptions = {}): Promise<Host> {
    return new HttpClient(opts).json('POST', `${path(id)}/drain`);
  },
  remove(id: string, opts: ConnectionOptions = {}): Promise<void> {
    return new HttpClient(opts).json('DELETE', path(id));
  },
};
