export { startPlatform, VERSION, type Platform, type StartOptions } from './platform';
export { loadConfig, type Config } from './config';
export { buildApp } from './app';
export { startAgent, type AgentOptions, type RunningAgent } from './hosts/agent-process';
export { startCluster, type Cluster } from './hosts/cluster';
