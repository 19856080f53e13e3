import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';

/** Imports a package must not make: the direction of dependencies between packages. */
function forbid(files, groups, message) {
  return {
    files,
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: groups, message }] }] },
  };
}

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.state/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Small files, one concept each: split a file before it grows past this.
      'max-lines': ['error', { max: 400 }],
    },
  },
  {
    files: ['packages/dashboard/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
    },
  },
  forbid(
    ['packages/dashboard/src/**'],
    [
      '@warren/host-agent',
      '@warren/server',
      '@warren/sdk',
      '@warren/guest-agent',
      '**/packages/**',
    ],
    'the dashboard runs in a browser and speaks the REST API only (types from @warren/protocol).',
  ),
  forbid(
    ['packages/protocol/src/**'],
    ['@warren/*', '**/packages/**', '../../**'],
    'protocol is the contract: it imports nothing of ours.',
  ),
  forbid(
    ['packages/server/src/**'],
    [
      '@warren/host-agent/*',
      '**/host-agent/**',
      '@warren/guest-agent',
      '@warren/guest-agent/*',
      '**/guest-agent/**',
    ],
    'the control plane reaches hosts through HostApi (@warren/protocol); from @warren/host-agent it takes createHostAgent and its config only.',
  ),
  forbid(
    ['packages/host-agent/src/**'],
    ['@warren/server', '@warren/server/*', '**/server/src/**', '@warren/sdk', '@warren/cli'],
    'the host agent does not know the control plane or its clients.',
  ),
  forbid(
    ['packages/guest-agent/src/**'],
    [
      '@warren/host-agent',
      '@warren/host-agent/*',
      '@warren/server',
      '@warren/sdk',
      '**/packages/**',
    ],
    'the guest agent runs inside sandboxes: it imports only @warren/protocol.',
  ),
  forbid(
    ['packages/sdk/src/**', 'packages/cli/src/**'],
    [
      '@warren/host-agent',
      '@warren/host-agent/*',
      '@warren/server',
      '@warren/server/*',
      '@warren/guest-agent',
    ],
    'clients speak the REST API only.',
  ),
);
