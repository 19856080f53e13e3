/**
 * `warren agent`: a host agent in its own process, for a control plane on
 * another process or machine. It joins once with a join token (the host id
 * and credential it gets are kept in `$WARREN_HOME/agent.json`, so a restart
 * joins no more), serves its HostApi over HTTP(S) with that credential, and
 * heartbeats to renew its lease. Told it was fenced (its lease ran out and
 * its work was recorded lost), it destroys every sandbox it holds and
 * heartbeats again under the new epoch: it rejoins empty.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHostAgent, type LocalHostAgent } from '@warren/host-agent';
import {
  WarrenError,
  type HostHeartbeat,
  type HostHeartbeatResponse,
  type HostJoinResponse,
} from '@warren/protocol';
import { serveHostApi } from '@warren/host-agent';
import { hostAgentConfig, loadConfig, type Config } from '../config';

export interface AgentOptions {
  controlPlane: string;
  joinToken?: string;
  /** Address the agent's HostApi listens on (default 127.0.0.1, port 0: any free one). */
  listen?: { host: string; port: number };
  /** The URL the control plane reaches it at (default: from the listen address). */
  advertise?: string;
  /** An id to join as (default: a new one). */
  hostId?: string;
  /** PEM files of the HostApi's TLS certificate and key: it serves HTTPS (the control plane needs WARREN_AGENT_CA_FILE). */
  tls?: { cert: string; key: string };
  config?: Partial<Config>;
  log?: (line: string) => void;
}

export interface RunningAgent {
  hostId: string;
  url: string;
  agent: LocalHostAgent;
  /** The epoch it owns its work under now. */
  epoch(): number;
  /** One heartbeat now (tests); the loop runs by itself. */
  heartbeat(): Promise<HostHeartbeatResponse | null>;
  close(o?: { destroy?: boolean }): Promise<void>;
}

interface Identity extends HostJoinResponse {
  control_plane: string;
}

async function call<T>(url: string, body: unknown, token?: string): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const json = (await res.json()) as T & {
    error?: { code: string; message: string; details?: object };
  };
  if (!res.ok) {
    const e = json.error;
    throw new WarrenError(
      (e?.code ?? 'INTERNAL') as 'INTERNAL',
      e?.message ?? `HTTP ${res.status}`,
      e?.details,
    );
  }
  return json;
}

async function identity(o: AgentOptions, home: string): Promise<Identity> {
  const file = join(home, 'agent.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Identity;
  if (!o.joinToken)
    throw new Error(`${file} does not exist: the first start of an agent needs --join-token`);
  const joined = await call<HostJoinResponse>(`${o.controlPlane}/v1/hosts/join`, {
    token: o.joinToken,
    ...(o.hostId ? { host_id: o.hostId } : {}),
  });
  const id: Identity = { ...joined, control_plane: o.controlPlane };
  writeFileSync(file, JSON.stringify(id, null, 2), { mode: 0o600 });
  return id;
}

/**
 * The built-in templates an agent builds at start: with a shared store, only
 * those it has (to bake them again when stale); the others it fetches from a
 * host that has them when a sandbox is first placed here (router.ts).
 */
async function templatesToBuild(agent: LocalHostAgent, config: Config): Promise<string[]> {
  if (config.snapshotStore.kind !== 's3') return config.templates;
  const here = await Promise.all(config.templates.map((n) => agent.templates.get(n)));
  return config.templates.filter((_, i) => here[i] && here[i].state !== 'not_built');
}

export async function startAgent(o: AgentOptions): Promise<RunningAgent> {
  const log = o.log ?? ((line: string) => console.log(`[warren agent] ${line}`));
  const base = loadConfig(process.env, o.config ?? {});
  mkdirSync(base.home, { recursive: true, mode: 0o700 });
  const id = await identity(o, base.home);
  const config = { ...base, hostId: id.host_id };
  let server: Awaited<ReturnType<typeof serveHostApi>> | null = null;
  const agent = await createHostAgent({
    ...hostAgentConfig(config),
    onEgressEvent: (sandboxId, e) => server?.emitEgress(sandboxId, e),
  });
  try {
    await agent.templates.ensure(await templatesToBuild(agent, config), log);
    server = await serveHostApi(agent, {
      credential: id.credential,
      listen: o.listen ?? { host: '127.0.0.1', port: 0 },
      tls: o.tls && { cert: readFileSync(o.tls.cert), key: readFileSync(o.tls.key) },
    });
  } catch (err) {
    await agent.close();
    throw err;
  }
  const url = o.advertise ?? server.url;
  let epoch = id.epoch;
  const beat = async (): Promise<HostHeartbeatResponse | null> => {
    const templates = (await agent.templates.list())
      .filter((t) => t.state === 'ready')
      .map((t) => t.name);
    const hb: HostHeartbeat = {
      epoch,
      url,
      capacity: await agent.capacity(),
      version: (await agent.info()).runtime_version,
      templates,
    };
    try {
      return await call<HostHeartbeatResponse>(
        `${o.controlPlane}/v1/hosts/${id.host_id}/heartbeat`,
        hb,
        id.credential,
      );
    } catch (err) {
      if (!(err instanceof WarrenError) || err.code !== 'HOST_FENCED') throw err;
      const next = (err.details as { epoch: number }).epoch;
      log(`fenced (${err.message}); destroying every sandbox of epoch ${epoch}`);
      for (const sbx of await agent.sandboxes.live())
        await agent.sandboxes.destroy(sbx).catch(() => undefined);
      await agent.sandboxes.reconcile([], []);
      epoch = next;
      return beat();
    }
  };
  await beat();
  log(`host ${id.host_id} serving at ${url}, joined to ${o.controlPlane}`);
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const every = Math.max(200, Math.floor((id.lease_seconds * 1000) / 3));
  const loop = () => {
    timer = setTimeout(() => {
      beat()
        .catch((err: Error) => log(`heartbeat failed: ${err.message}`))
        .finally(() => {
          if (!stopped) loop();
        });
    }, every);
  };
  loop();
  return {
    hostId: id.host_id,
    url,
    agent,
    epoch: () => epoch,
    heartbeat: beat,
    async close(c = { destroy: config.destroyOnClose }) {
      stopped = true;
      if (timer) clearTimeout(timer);
      await server?.close();
      await agent.close(c);
    },
  };
}
