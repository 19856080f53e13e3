/**
 * Turns the global --api/--token options into SDK connection options; the SDK
 * itself falls back to $WARREN_API, $WARREN_API_KEY and the admin token file.
 */
import type { ConnectionOptions } from '@warren/sdk';
import type { Command } from 'commander';
import { Agent, setGlobalDispatcher } from 'undici';

let dispatcherSet = false;

export function connection(cmd: Command): ConnectionOptions {
  if (!dispatcherSet) {
    // fetch's defaults abort a response after 300 s without headers or body
    // bytes; `exec` of a long, quiet command (a build, `sleep 600`) must survive that.
    setGlobalDispatcher(new Agent({ headersTimeout: 0, bodyTimeout: 0 }));
    dispatcherSet = true;
  }
  const { api, token } = cmd.optsWithGlobals<{ api?: string; token?: string }>();
  return { apiUrl: api, apiKey: token };
}
