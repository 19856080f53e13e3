export { createProgram, runCli } from './program';
export type { Io, Output } from './io';
export { formatError } from './io';
export { parseCpTarget, parseKeyValue } from './args';
