export { startPlatform, VERSION, type Platform, type StartOptions } from './platform';
export { loadConfig, type Config } from './config';
export { buildApp } from './app';
