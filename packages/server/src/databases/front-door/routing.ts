/**
 * Which database a connection is for. A client names an endpoint: the
 * database id for a direct connection, or the id followed by `-pooler` for
 * PgBouncer. It can say so in three ways, looked at in this order:
 *
 *   1. SNI: the host name `<endpoint>.<sniDomain>` (libpq and node-postgres
 *      send it by themselves when the host is a name);
 *   2. the startup `options`: `endpoint=<endpoint>` (also `--endpoint=` or
 *      `-c endpoint=`), e.g. `?options=endpoint%3D<endpoint>` in a URL;
 *   3. the user name: `<role>.<endpoint>`.
 *
 * The endpoint is stripped from `options` and from the user name before the
 * startup reaches Postgres. Host names cannot carry `_` (and OpenSSL refuses
 * to match one against a wildcard certificate), so `db-<rest>` is the same
 * endpoint as `db_<rest>` everywhere.
 */
import { ID_PREFIX } from '@warren/protocol';
import { WireError } from './wire';

export interface FrontDoorRoute {
  databaseId: string;
  /** Through PgBouncer (the `-pooler` endpoint) rather than straight to Postgres. */
  pooled: boolean;
}

export interface RoutedStartup {
  route: FrontDoorRoute;
  /** The startup parameters to send on: endpoint removed from `options` and `user`. */
  params: Map<string, string>;
  /** The role and database the client asks for (database defaults to the role, as in Postgres). */
  user: string;
  database: string;
}

const ENDPOINT = new RegExp(`^${ID_PREFIX.database}[_-]([0-9a-z]{16,32})(-pooler)?$`);

/** The route an endpoint name stands for, or null when it is not one. */
export function parseEndpoint(name: string): FrontDoorRoute | null {
  const m = ENDPOINT.exec(name.toLowerCase());
  if (!m) return null;
  return { databaseId: `${ID_PREFIX.database}_${m[1]}`, pooled: m[2] !== undefined };
}

/** The endpoint named by the SNI host name, if any. */
export function endpointFromSni(
  servername: string | null | undefined,
  sniDomain?: string,
): FrontDoorRoute | null {
  if (!servername) return null;
  const name = servername.toLowerCase().replace(/\.$/, '');
  const dot = name.indexOf('.');
  const first = dot < 0 ? name : name.slice(0, dot);
  if (sniDomain !== undefined && name.slice(dot + 1) !== sniDomain.toLowerCase().replace(/\.$/, ''))
    return null;
  if (sniDomain !== undefined && dot < 0) return null;
  return parseEndpoint(first);
}

interface OptionToken {
  /** As written, escapes included: what is sent on. */
  raw: string;
  /** With backslash escapes resolved, as Postgres reads it. */
  value: string;
}

/** Splits an `options` string as Postgres does: on whitespace, `\` escaping the next character. */
export function splitOptions(options: string): OptionToken[] {
  const out: OptionToken[] = [];
  let i = 0;
  while (i < options.length) {
    while (i < options.length && /\s/.test(options[i]!)) i++;
    if (i >= options.length) break;
    const start = i;
    let value = '';
    while (i < options.length && !/\s/.test(options[i]!)) {
      if (options[i] === '\\' && i + 1 < options.length) i++;
      value += options[i];
      i++;
    }
    out.push({ raw: options.slice(start, i), value });
  }
  return out;
}

/** Takes `endpoint=` out of an options string: the endpoints it named and what is left. */
export function takeEndpointOption(options: string): { endpoints: string[]; rest: string } {
  const tokens = splitOptions(options);
  const endpoints: string[] = [];
  const kept: string[] = [];
  const named = (v: string): string | null => {
    const m = /^(?:--)?endpoint=(.*)$/.exec(v);
    return m ? m[1]! : null;
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    let value: string | null;
    if (t.value === '-c' && next && (value = named(next.value)) !== null) {
      endpoints.push(value);
      i++;
    } else if (t.value.startsWith('-c') && (value = named(t.value.slice(2))) !== null) {
      endpoints.push(value);
    } else if ((value = named(t.value)) !== null) {
      endpoints.push(value);
    } else kept.push(t.raw);
  }
  return { endpoints, rest: kept.join(' ') };
}

export function routingHint(sniDomain?: string): string {
  const sni = sniDomain ? `connect to host <endpoint>.${sniDomain}, or ` : '';
  return (
    `Name the database's endpoint: ${sni}add options=endpoint%3D<endpoint> to the connection ` +
    'string, or connect as user <role>.<endpoint>. The endpoint is the database id ' +
    '(db_...) for a direct connection, or the id followed by -pooler for the pooled one.'
  );
}

/** Finds the route of a startup and rewrites its parameters; throws WireError when it cannot. */
export function routeStartup(
  params: Map<string, string>,
  servername: string | null | undefined,
  sniDomain?: string,
): RoutedStartup {
  const out = new Map(params);
  const found: { how: string; route: FrontDoorRoute }[] = [];

  const sni = endpointFromSni(servername, sniDomain);
  if (sni) found.push({ how: 'the host name', route: sni });

  const options = params.get('options');
  if (options !== undefined) {
    const { endpoints, rest } = takeEndpointOption(options);
    for (const e of endpoints) {
      const route = parseEndpoint(e);
      if (!route)
        throw new WireError('3D000', `endpoint "${e}" does not exist`, routingHint(sniDomain));
      found.push({ how: 'options', route });
    }
    if (endpoints.length > 0) {
      if (rest) out.set('options', rest);
      else out.delete('options');
    }
  }

  let user = params.get('user') ?? '';
  const dot = user.lastIndexOf('.');
  const suffix = dot > 0 ? parseEndpoint(user.slice(dot + 1)) : null;
  if (suffix) {
    found.push({ how: 'the user name', route: suffix });
    user = user.slice(0, dot);
    out.set('user', user);
  }

  const first = found[0];
  if (!first)
    throw new WireError('08004', 'no database endpoint in the connection', routingHint(sniDomain));
  for (const f of found.slice(1))
    if (f.route.databaseId !== first.route.databaseId || f.route.pooled !== first.route.pooled)
      throw new WireError(
        '08004',
        `conflicting endpoints: ${first.how} names ${endpointName(first.route)}, ${f.how} names ${endpointName(f.route)}`,
      );
  return { route: first.route, params: out, user, database: params.get('database') || user };
}

export function endpointName(r: FrontDoorRoute): string {
  return r.pooled ? `${r.databaseId}-pooler` : r.databaseId;
}
