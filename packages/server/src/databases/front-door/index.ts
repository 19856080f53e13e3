/** The database front door: one Postgres port for every database, over TLS. */
export { FrontDoor, type FrontDoorOptions, type FrontDoorRoute, type FrontDoorLog } from './server';
export { openDatabaseTls, type DatabaseTls, type DatabaseTlsOptions } from './tls';
export { parseEndpoint, endpointName } from './routing';
