export * from './errors';
export * from './ids';
export * from './api';
export * from './guest';
export * from './network';
export * from './host';
