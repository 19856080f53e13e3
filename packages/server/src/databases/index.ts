/**
 * Managed databases, assembled: the service and its parts, the archiver, the
 * watch and the front door (TLS on one host port, routing by endpoint).
 */
import { join } from 'node:path';
import type { HostApi } from '@warren/protocol';
import type { Config } from '../config';
import type { SandboxCreator } from '../sandboxes/create';
import type { SandboxLifecycle } from '../sandboxes/lifecycle';
import type { Store } from '../store/store';
import { DatabaseArchiver } from './archiver';
import { DatabaseCopies } from './copies';
import { FrontDoor } from './front-door/server';
import { openDatabaseTls, type DatabaseTls } from './front-door/tls';
import { DatabaseProvisioner } from './provision';
import { DatabaseService } from './service';
import { DatabaseWatch } from './watch';

/** Where database housekeeping and connection failures are logged (a pino logger fits). */
export interface DatabaseLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface Databases {
  service: DatabaseService;
  copies: DatabaseCopies;
  archiver: DatabaseArchiver;
  watch: DatabaseWatch;
  frontDoor: FrontDoor;
  tls: DatabaseTls;
  caPem(): string;
  /** Starts the front door, the archiver and the watch; returns the front door's port. */
  start(): Promise<number>;
  stop(): Promise<void>;
}

export async function createDatabases(
  store: Store,
  host: HostApi,
  config: Config,
  creator: SandboxCreator,
  lifecycle: SandboxLifecycle,
  log: DatabaseLog,
): Promise<Databases> {
  const provisioner = new DatabaseProvisioner(host, creator, lifecycle);
  const service = new DatabaseService(store, host, config, provisioner, lifecycle);
  const archiver = new DatabaseArchiver(host, service.queries, provisioner, config, log);
  service.archiver = archiver;
  const watch = new DatabaseWatch(service, log);
  const tls = await openDatabaseTls(join(config.home, 'db-tls'), {
    names: ['localhost', '127.0.0.1', '::1', config.dbHost, `*.${config.dbDomain}`],
  });
  const frontDoor = new FrontDoor({
    tls: tls.context,
    sniDomain: config.dbDomain,
    connect: (route) => service.connect(route.databaseId, route.pooled),
    onOpen: (id) => watch.seen(id),
    onClose: (id) => watch.seen(id),
    log,
  });
  service.openConnections = (id) => frontDoor.connections(id);
  service.connected = () => frontDoor.databases();
  return {
    service,
    copies: new DatabaseCopies(service),
    archiver,
    watch,
    frontDoor,
    tls,
    caPem: () => tls.caPem,
    async start() {
      const port = await frontDoor.listen(config.dbPort, config.dbListen ?? config.host);
      service.address = { host: config.dbHost, port };
      archiver.start();
      watch.start();
      return port;
    },
    async stop() {
      await watch.stop();
      await archiver.stop();
      await frontDoor.close();
    },
  };
}
