/**
 * Where the API is and which token to send. Explicit options win over the
 * environment, and the environment wins over the admin token that `warren up`
 * writes, so a laptop with a local platform needs no configuration at all.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

export interface ConnectionOptions {
  /** Base URL of the REST API. Default: $WARREN_API, else http://127.0.0.1:8080. */
  apiUrl?: string;
  /** API token. Default: $WARREN_API_KEY, else the contents of $WARREN_HOME/admin-token. */
  apiKey?: string;
  /**
   * The fetch the SDK sends requests with; default the global one. The server's
   * MCP endpoint passes one that answers in-process, through the API's own routes.
   */
  fetch?: typeof fetch;
}

export interface ResolvedConfig {
  apiUrl: string;
  apiKey: string | undefined;
}

type Env = Record<string, string | undefined>;

/** $WARREN_HOME, or ~/.warren. */
export function warrenHome(env: Env = process.env): string {
  return env.WARREN_HOME || join(homedir(), '.warren');
}

export function tokenFilePath(env: Env = process.env): string {
  return join(warrenHome(env), 'admin-token');
}

/** `env` is a parameter so tests can resolve against a fake environment. */
export function resolveConfig(
  opts: ConnectionOptions = {},
  env: Env = process.env,
): ResolvedConfig {
  // `||` rather than `??`: an empty variable (WARREN_API_KEY= ) means "not set".
  const apiUrl = (opts.apiUrl || env.WARREN_API || DEFAULT_API_URL).replace(/\/+$/, '');
  const apiKey = opts.apiKey || env.WARREN_API_KEY || readTokenFile(env);
  return { apiUrl, apiKey };
}

function readTokenFile(env: Env): string | undefined {
  try {
    return readFileSync(tokenFilePath(env), 'utf8').trim() || undefined;
  } catch {
    // No file (platform never started here) or unreadable: send no token, and let
    // the 401 that follows explain where a token comes from.
    return undefined;
  }
}
