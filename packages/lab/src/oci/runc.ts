// The node agent's OCI image (scripts/image.sh) as runc runs it, for `lab up --image`: `umoci unpack` makes a
// runtime bundle from the archive (no container daemon), and runcSpec writes the config.json a container of it
// runs with, joined to a node's network namespace.
//
// Why runc and this spec: on these hosts crun refuses the hybrid cgroup layout (v1 controllers + a v2
// "unified" mount), and podman's default rlimits are refused ("error setting rlimit … operation not permitted").
// Debian's runc (1.1) with a spec that sets no rlimits, no cgroup namespace and no cgroupsPath works, as root.
import { mkdir, readFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';

/** An unpacked image: the bundle umoci made, and the process its image config asks for. */
export interface OciBundle {
  /** The bundle directory (`runc --bundle`) umoci unpacked into. */
  readonly bundle: string;
  readonly rootfs: string;
  /** umoci's config.json, from the image config (each container run writes its own spec beside its bundle). */
  readonly config: string;
  /** The image's Entrypoint + Cmd, Env and WorkingDir, as umoci translated them. */
  readonly args: readonly string[];
  readonly env: readonly string[];
  readonly cwd: string;
}

/** A file or directory of the host made visible in the container. */
export interface BindMount {
  readonly source: string;
  readonly destination: string;
  readonly readonly?: boolean;
}

export interface ContainerOptions {
  /** The whole argv, as a Pod's `command` and `args` give it (it replaces the image's entry point). */
  readonly command: readonly string[];
  /** Added to (and overriding) the image's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** The network namespace to join: a name from `ip netns add` (/run/netns/NAME) or a path (/proc/PID/ns/net). */
  readonly netns: string;
  /** In order, after the standard mounts: a kubeconfig, a config directory, /run/xtables.lock, /lib/modules. */
  readonly mounts?: readonly BindMount[];
  /** A read-only root file system (writable /run and /tmp are tmpfs either way). */
  readonly readonlyRoot?: boolean;
  readonly hostname?: string;
}

/**
 * What the agent uses: NET_ADMIN for nftables, iptables, conntrack and the net.* sysctls; NET_RAW for
 * iptables-legacy's raw socket; NET_BIND_SERVICE for a low bind address; DAC_OVERRIDE for mounted files owned by
 * someone else; KILL. Not SYS_RESOURCE: these hosts' own bounding set lacks it, and runc then fails with "unable
 * to apply caps: operation not permitted" (the agent never sets its oomScoreAdj, so it does not need it).
 */
export const AGENT_CAPABILITIES: readonly string[] = [
  'CAP_NET_ADMIN',
  'CAP_NET_RAW',
  'CAP_NET_BIND_SERVICE',
  'CAP_DAC_OVERRIDE',
  'CAP_KILL',
];

/** The part of the OCI runtime spec (config.json) that runcSpec writes. */
export interface RuntimeSpec {
  readonly ociVersion: string;
  readonly process: {
    readonly terminal: boolean;
    readonly user: { readonly uid: number; readonly gid: number };
    readonly args: readonly string[];
    readonly env: readonly string[];
    readonly cwd: string;
    readonly capabilities: Readonly<Record<'bounding' | 'effective' | 'permitted', readonly string[]>>;
    readonly noNewPrivileges: boolean;
  };
  readonly root: { readonly path: string; readonly readonly: boolean };
  readonly hostname: string;
  readonly mounts: readonly RuntimeMount[];
  readonly linux: {
    readonly resources: { readonly devices: readonly { readonly allow: boolean; readonly access: string }[] };
    readonly namespaces: readonly { readonly type: string; readonly path?: string }[];
    readonly maskedPaths: readonly string[];
    readonly readonlyPaths: readonly string[];
  };
}

interface RuntimeMount {
  readonly destination: string;
  readonly type: string;
  readonly source: string;
  readonly options: readonly string[];
}

/** Runs a command through the seam; rejects naming `action` and the command's stderr when it fails. */
async function mustRun(
  runner: CommandRunner,
  action: string,
  cmd: string,
  args: readonly string[],
): Promise<void> {
  const r = await runner.run(cmd, args);
  if (r.code !== 0)
    throw new Error(`${action}: ${cmd} ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
}

/**
 * Unpacks an OCI archive (a tar of an OCI layout, as scripts/image.sh writes) into `dir`: the layout in
 * dir/layout, the runtime bundle in dir/bundle. `tag` defaults to the archive's only (first) reference.
 */
export async function unpackImage(
  runner: CommandRunner,
  archive: string,
  dir: string,
  tag?: string,
): Promise<OciBundle> {
  const layout = join(dir, 'layout');
  const bundle = join(dir, 'bundle');
  await mkdir(layout, { recursive: true });
  await mustRun(runner, `unpack ${archive}`, 'tar', ['-xf', archive, '-C', layout]);
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as {
    manifests?: { annotations?: Record<string, string> }[];
  };
  const ref = tag ?? index.manifests?.[0]?.annotations?.['org.opencontainers.image.ref.name'];
  if (ref === undefined) throw new Error(`${archive}: index.json names no image (no ref.name annotation)`);
  await mustRun(runner, `unpack image ${ref}`, 'umoci', ['unpack', '--image', `${layout}:${ref}`, bundle]);
  const config = join(bundle, 'config.json');
  const spec = JSON.parse(await readFile(config, 'utf8')) as {
    process?: { args?: string[]; env?: string[]; cwd?: string };
  };
  return {
    bundle,
    rootfs: join(bundle, 'rootfs'),
    config,
    args: spec.process?.args ?? [],
    env: spec.process?.env ?? [],
    cwd: spec.process?.cwd ?? '/',
  };
}

/**
 * The spec a container of `image` runs with. Its own mount, pid, ipc and uts namespaces, the network namespace
 * joined by path; no user or cgroup namespace, no cgroupsPath and no resource limits: runc then makes a cgroup
 * named after the container in each hierarchy and removes it at the end, which works on a hybrid cgroup host.
 * No rlimits: the container inherits runc's. /proc/sys stays writable, since the agent sets sysctls as a
 * privileged kube-proxy does; /sys is read-only, so the agent's (host-wide) conntrack hashsize write fails
 * unless the caller mounts /sys/module, or sets conntrack.maxPerCore: 0 as a test in a namespace should.
 */
export function runcSpec(image: OciBundle, opts: ContainerOptions): RuntimeSpec {
  const env = new Map(image.env.map((e) => [e.slice(0, e.indexOf('=')), e] as const));
  for (const [k, v] of Object.entries(opts.env ?? {})) env.set(k, `${k}=${v}`);
  const caps = [...AGENT_CAPABILITIES];
  const netns = isAbsolute(opts.netns) ? opts.netns : `/run/netns/${opts.netns}`;
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args: opts.command,
      env: [...env.values()],
      cwd: image.cwd,
      capabilities: { bounding: caps, effective: caps, permitted: caps },
      noNewPrivileges: true,
    },
    root: { path: image.rootfs, readonly: opts.readonlyRoot ?? false },
    hostname: opts.hostname ?? 'kube-proxy-ts',
    mounts: specMounts(opts.mounts ?? []),
    linux: {
      // Deny all, to which runc adds its default devices (null, zero, full, tty, random, urandom, ptmx, pts).
      resources: { devices: [{ allow: false, access: 'rwm' }] },
      namespaces: [
        { type: 'mount' },
        { type: 'pid' },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'network', path: netns },
      ],
      maskedPaths: [
        '/proc/kcore',
        '/proc/keys',
        '/proc/latency_stats',
        '/proc/timer_list',
        '/proc/sched_debug',
        '/sys/firmware',
      ],
      readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sysrq-trigger'],
    },
  };
}

/** runc's usual mounts, writable tmpfs on /run and /tmp (for a read-only root), then the caller's binds in order. */
function specMounts(binds: readonly BindMount[]): RuntimeMount[] {
  const tmpfs = (destination: string, options: string[]): RuntimeMount => ({
    destination,
    type: 'tmpfs',
    source: 'tmpfs',
    options: ['nosuid', ...options],
  });
  return [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    // /dev holds the device nodes runc makes: no nodev there.
    tmpfs('/dev', ['strictatime', 'mode=755', 'size=65536k']),
    {
      destination: '/dev/pts',
      type: 'devpts',
      source: 'devpts',
      options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'],
    },
    tmpfs('/dev/shm', ['nodev', 'noexec', 'mode=1777', 'size=65536k']),
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
    tmpfs('/run', ['nodev', 'mode=755']),
    tmpfs('/tmp', ['nodev', 'mode=1777']),
    ...binds.map((m) => ({
      destination: m.destination,
      type: 'bind',
      source: m.source,
      options: ['rbind', m.readonly === true ? 'ro' : 'rw'],
    })),
  ];
}
