import { GUEST_AGENT_DIR, GUEST_CHANNEL_DIR, GUEST_VOLUMES_DIR } from '@warren/protocol/guest';
import type { SandboxSpec } from '../driver';

/** The CFS period of a sandbox's CPU quota. */
export const CPU_PERIOD_US = 100_000;

/** The CFS quota that holds a sandbox to `cpu` CPUs, per CPU_PERIOD_US. */
export function cpuQuotaUs(cpu: number): number {
  return Math.round(cpu * CPU_PERIOD_US);
}

/**
 * Bumped when a change of the driver must reach baked images (capabilities, the
 * agent's command, checkpoint options): part of the runtime version a template
 * snapshot is baked for.
 */
export const SPEC_REVISION = 4;

/**
 * Root in a sandbox has the capabilities a container runtime gives by default
 * (chown, setuid, kill, ...), enforced by gVisor's kernel, not the host's.
 * The guest agent also holds CAP_SYS_ADMIN to give each restored copy its own
 * host name; its process helper drops it from the bounding set, so no user
 * process can have it.
 */
const USER_CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
];
const AGENT_CAPS = [...USER_CAPS, 'CAP_SYS_ADMIN'];

/**
 * V8's memory reducer shrinks the heap with a full collection some seconds
 * after the last one. In a restored copy the clock has jumped by the image's
 * age, so it fires at once and its concurrent marking held up the copy's
 * first requests: the hello took 53 to 62 ms instead of about 21 ms
 * (medians of 14 creates). The cost: an idle sandbox keeps a little more
 * memory, 32.9 MiB against 31.2 (memory cgroups of 6 sandboxes after 20 execs
 * each and 30 s of rest).
 */
const AGENT_NODE_FLAGS = ['--no-memory-reducer'];

/**
 * The OCI runtime spec of one sandbox: the guest agent is its first process.
 * With `unlimitedCpu` (restores) the sandbox gets no CPU quota; the driver's
 * limitCpu sets it afterwards.
 */
export function ociSpec(spec: SandboxSpec, o: { unlimitedCpu?: boolean } = {}): object {
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
        ...AGENT_NODE_FLAGS,
        `${GUEST_AGENT_DIR}/agent.js`,
      ],
      env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      cwd: '/',
      capabilities: {
        bounding: AGENT_CAPS,
        effective: AGENT_CAPS,
        permitted: AGENT_CAPS,
        inheritable: [],
        ambient: [],
      },
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
        cpu: o.unlimitedCpu
          ? { period: CPU_PERIOD_US }
          : { quota: cpuQuotaUs(spec.cpu), period: CPU_PERIOD_US },
      },
    },
  };
}
