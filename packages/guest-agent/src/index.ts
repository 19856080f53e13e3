/**
 * The guest agent runs inside each sandbox, not in the control plane: the
 * host agent bundles src/main.ts into one file with esbuild and mounts it at
 * /opt/warren (see host-agent/src/templates/guest-bundle.ts). Nothing here is
 * imported by other packages.
 */
export {};
