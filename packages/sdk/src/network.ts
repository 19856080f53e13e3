/** A sandbox's egress policy, bound secrets and egress log (`sandbox.network`). */
import type { EgressEvent, NetworkUpdate, NetworkView } from '@warren/protocol';
import type { HttpClient } from './client';

export interface EgressLogOptions {
  decision?: 'allowed' | 'denied';
  /** 1..1000 (server default 100). */
  limit?: number;
  /** Events older than this id. */
  before?: number;
}

export class Network {
  readonly #http: HttpClient;
  readonly #path: string;

  constructor(http: HttpClient, sandboxId: string) {
    this.#http = http;
    this.#path = `/v1/sandboxes/${encodeURIComponent(sandboxId)}`;
  }

  /** The policy, and the hosts and headers secrets go to (never their values). */
  get(): Promise<NetworkView> {
    return this.#http.json<NetworkView>('GET', `${this.#path}/network`);
  }

  /** Replaces the policy (and the secrets, when given); new connections follow it at once. */
  set(update: NetworkUpdate): Promise<NetworkView> {
    return this.#http.json<NetworkView>('PUT', `${this.#path}/network`, { json: update });
  }

  /** Egress decisions, newest first. */
  async log(opts: EgressLogOptions = {}): Promise<EgressEvent[]> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts)) if (v !== undefined) q.set(k, String(v));
    const query = q.size > 0 ? `?${q}` : '';
    return (await this.#http.json<{ items: EgressEvent[] }>('GET', `${this.#path}/egress${query}`))
      .items;
  }
}
