#!/usr/bin/env node
// The CLI is TypeScript run from source: register tsx first, then load the entry.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
