import { GUEST_AGENT_DIR, GUEST_CHANNEL_DIR, GUEST_VOLUMES_DIR } from '@warren/protocol/guest';
import type { SandboxSpec } from '../driver';

const CPU_PERIOD_US = 100_000;

/** The OCI runtime spec of one sandbox: the guest agent is its first process. */
export function ociSpec(spec: SandboxSpec): object {
  const env = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: '/root',
    ...spec.env,
  };
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args: [
        `${GUEST_AGENT_DIR}/lib/ld-linux-x86-64.so.2`,
        '--library-path',
        `${GUEST_AGENT_DIR}/lib`,
        `${GUEST_AGENT_DIR}/node`,
        `${GUEST_AGENT_DIR}/agent.js`,
      ],
      env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      cwd: '/',
    },
    // Writable from inside, but only into the private overlay (--overlay2=root:...):
    // the shared template directory on the host is never modified.
    root: { path: spec.rootfs, readonly: false },
    hostname: spec.hostname,
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      {
        destination: '/dev',
        type: 'tmpfs',
        source: 'tmpfs',
        options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'],
      },
      {
        destination: '/dev/pts',
        type: 'devpts',
        source: 'devpts',
        options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'],
      },
      {
        destination: '/dev/shm',
        type: 'tmpfs',
        source: 'shm',
        options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'],
      },
      {
        destination: '/sys',
        type: 'sysfs',
        source: 'sysfs',
        options: ['nosuid', 'noexec', 'nodev', 'ro'],
      },
      {
        destination: GUEST_AGENT_DIR,
        type: 'bind',
        source: spec.guestDir,
        options: ['rbind', 'ro'],
      },
      {
        destination: GUEST_CHANNEL_DIR,
        type: 'bind',
        source: spec.channelDir,
        options: ['rbind', 'rw'],
      },
      // Below the channel mount, so runsc makes its mount point in the sandbox's own
      // channel directory and never in the shared template root.
      ...(spec.volumesDir
        ? [
            {
              destination: GUEST_VOLUMES_DIR,
              type: 'bind',
              source: spec.volumesDir,
              options: ['rbind', 'rw'],
            },
          ]
        : []),
    ],
    linux: {
      namespaces: [
        { type: 'pid' },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'mount' },
        { type: 'network' },
      ],
      resources: {
        memory: { limit: spec.memoryMb * 1024 * 1024 },
        cpu: { quota: Math.round(spec.cpu * CPU_PERIOD_US), period: CPU_PERIOD_US },
      },
    },
  };
}
