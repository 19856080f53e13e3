/** What the egress proxy is given, what it records, and what it keeps per sandbox. */
import type { Duplex } from 'node:stream';
import type { AddressGuard } from '../addresses';
import type { EgressCa } from '../ca';
import type { CompiledPolicy, Presets } from '../policy';
import type { Resolver } from '../resolver';

export interface EgressRecord {
  at: string;
  protocol: 'http' | 'connect' | 'socks5';
  host: string;
  port: number;
  address: string | null;
  decision: 'allowed' | 'denied';
  reason: string;
  bytes_out: number;
  bytes_in: number;
  duration_ms: number;
}

export interface EgressOptions {
  ca: EgressCa;
  resolver: Resolver;
  guard: AddressGuard;
  presets: Presets;
  /** Every decision, with byte counts once the connection is over. */
  onEvent: (sandboxId: string, event: EgressRecord) => void;
  connectTimeoutMs?: number;
}

export interface SandboxEgress {
  id: string;
  policy: CompiledPolicy;
  secrets: Map<string, Array<{ header: string; value: string }>>;
  sockets: Set<Duplex>;
}

/** Which connection a record is about, before it has an address and byte counts. */
export type EgressTarget = Pick<EgressRecord, 'protocol' | 'host' | 'port'>;
