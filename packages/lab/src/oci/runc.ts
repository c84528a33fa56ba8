// Running the node agent's OCI image (scripts/image.sh) with runc, so a test can check the image itself: its
// Node.js, koffi, nft and iptables, joined to a test's network namespace. No container daemon: `umoci unpack`
// makes a runtime bundle from the archive, and `runc run` starts one container per call.
//
// Why runc and this spec: on these hosts crun refuses the hybrid cgroup layout (v1 controllers + a v2
// "unified" mount), and podman's default rlimits are refused ("error setting rlimit … operation not permitted").
// Debian's runc (1.1) with a spec that sets no rlimits, no cgroup namespace and no cgroupsPath works, as root.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { Readable } from 'node:stream';

/** An unpacked image: the bundle umoci made, and the process its image config asks for. */
export interface OciBundle {
  /** The bundle directory (`runc --bundle`) umoci unpacked into. */
  readonly bundle: string;
  readonly rootfs: string;
  /** umoci's config.json, from the image config; runContainer writes its own spec elsewhere. */
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
  /** Arguments after the image's entry point (kube-proxy-ts's flags). */
  readonly args?: readonly string[];
  /** The whole argv instead of entry point + args (e.g. ['/usr/sbin/nft', 'list', 'ruleset']). */
  readonly command?: readonly string[];
  /** Added to (and overriding) the image's environment. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** The network namespace to join: a name from `ip netns add` (/run/netns/NAME) or a path (/proc/PID/ns/net). */
  readonly netns: string;
  /** In order, after the standard mounts: a kubeconfig, a config directory, /run/xtables.lock, /lib/modules. */
  readonly mounts?: readonly BindMount[];
  /** A read-only root file system (writable /run and /tmp are tmpfs either way). */
  readonly readonlyRoot?: boolean;
  /** Default AGENT_CAPABILITIES. */
  readonly capabilities?: readonly string[];
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

/** Runs a command to its end; rejects naming `action` with the command's stderr when it fails. */
function run(action: string, cmd: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (e) => reject(new Error(`${action}: ${cmd}: ${e.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve(stdout);
      else
        reject(new Error(`${action}: ${cmd} ${args.join(' ')} exited ${code ?? signal}: ${stderr.trim()}`));
    });
  });
}

/**
 * Unpacks an OCI archive (a tar of an OCI layout, as scripts/image.sh writes) into `dir`: the layout in
 * dir/layout, the runtime bundle in dir/bundle. `tag` defaults to the archive's only (first) reference.
 */
export async function unpackImage(archive: string, dir: string, tag?: string): Promise<OciBundle> {
  const layout = join(dir, 'layout');
  const bundle = join(dir, 'bundle');
  await mkdir(layout, { recursive: true });
  await run(`unpack ${archive}`, 'tar', ['-xf', archive, '-C', layout]);
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as {
    manifests?: { annotations?: Record<string, string> }[];
  };
  const ref = tag ?? index.manifests?.[0]?.annotations?.['org.opencontainers.image.ref.name'];
  if (ref === undefined) throw new Error(`${archive}: index.json names no image (no ref.name annotation)`);
  await run(`unpack image ${ref}`, 'umoci', ['unpack', '--image', `${layout}:${ref}`, bundle]);
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
  const caps = [...(opts.capabilities ?? AGENT_CAPABILITIES)];
  const netns = isAbsolute(opts.netns) ? opts.netns : `/run/netns/${opts.netns}`;
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args: opts.command ?? [...image.args, ...(opts.args ?? [])],
      env: [...env.values()],
      cwd: opts.cwd ?? image.cwd,
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

export interface RunOptions extends ContainerOptions {
  readonly image: OciBundle;
  /** runc's state directory (`runc --root`); default runc's own (/run/runc). */
  readonly runcRoot?: string;
}

/** A running container. Its output is the caller's to read; `exited` resolves (never rejects) with the code. */
export interface RunningContainer {
  readonly id: string;
  /** The container's first process, as the host sees it (for /proc/PID/ns, nsenter). */
  readonly pid: number;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** runc's exit code: the container's, or 128 + the signal that ended it. */
  readonly exited: Promise<number>;
  /**
   * Sends `signal` (runc kill), then SIGKILL after `graceMs`; resolves with the exit code. The container's first
   * process is PID 1 of its namespace, which ignores any signal it has no handler for: the agent handles SIGTERM,
   * a bare `sleep` only ends at the SIGKILL (137).
   */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number>;
  /** runc delete --force and the spec's directory; safe to call more than once, and after the exit. */
  cleanup(): Promise<void>;
}

let counter = 0;

/**
 * Starts `runc run` for one new container (a fresh id per call, so tests in parallel never collide) and
 * resolves once runc wrote the container's pid, or rejects with runc's stderr if it exited first.
 * A detached watchdog deletes the container should this process die without calling cleanup().
 */
export async function runContainer(opts: RunOptions): Promise<RunningContainer> {
  const id = `kpts-${process.pid}-${++counter}-${randomBytes(3).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), `${id}-`));
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(runcSpec(opts.image, opts), null, 2)}\n`);
  const runc = (...args: string[]): string[] => [
    ...(opts.runcRoot ? ['--root', opts.runcRoot] : []),
    ...args,
  ];
  const pidFile = join(dir, 'pid');
  const child = spawn('runc', runc('run', '--bundle', dir, '--pid-file', pidFile, id), {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The caller's stderr is a copy, so that reading runc's own complaints here takes nothing from the caller.
  const stderr = new PassThrough();
  child.stderr.pipe(stderr);
  let stderrTail = '';
  child.stderr.on('data', (d: Buffer) => (stderrTail = (stderrTail + d.toString()).slice(-4000)));
  const exited = exitOf(child);
  const watchdog = startWatchdog(dir, runc('delete', '--force', id));
  const cleanup = async (): Promise<void> => {
    await run(`delete container ${id}`, 'runc', runc('delete', '--force', id)).catch(() => undefined);
    watchdog.kill();
    await rm(dir, { recursive: true, force: true });
  };
  let pid: number;
  try {
    pid = await waitForPid(pidFile, exited, () => stderrTail);
  } catch (e) {
    await cleanup();
    throw e;
  }
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<number> => {
    await run(`signal container ${id}`, 'runc', runc('kill', id, signal)).catch(() => undefined);
    const kill = (): void =>
      void run(`kill container ${id}`, 'runc', runc('kill', id, 'SIGKILL')).catch(() => 0);
    const timer = setTimeout(kill, graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  return { id, pid, stdout: child.stdout, stderr, exited, stop, cleanup };
}

/** runc's exit as a code: 128 + n when runc itself was killed by a signal; -1 when it could not start. */
function exitOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.on('error', () => resolve(-1));
    child.on('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
  });
}

/** Polls runc's pid file until it holds a pid; rejects with runc's stderr when runc exits before writing it. */
async function waitForPid(pidFile: string, exited: Promise<number>, stderr: () => string): Promise<number> {
  let done: number | undefined;
  void exited.then((c) => (done = c));
  for (;;) {
    const text = (await readFile(pidFile, 'utf8').catch(() => '')).trim();
    if (/^\d+$/.test(text)) return Number(text);
    if (done !== undefined)
      throw new Error(`runc run exited ${done} before the container started: ${stderr().trim()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A detached shell that outlives this process: once this process is gone (killed, even by SIGKILL), it runs
 * `runc delete --force` and removes the spec's directory, so nothing is left behind. cleanup() kills it first
 * when things end normally.
 */
function startWatchdog(dir: string, deleteArgs: readonly string[]): ChildProcess {
  const script =
    'pid=$1 dir=$2; shift 2; while kill -0 "$pid" 2>/dev/null; do sleep 1; done; runc "$@" >/dev/null 2>&1; rm -rf "$dir"';
  const child = spawn('sh', ['-c', script, 'kpts-runc-watchdog', String(process.pid), dir, ...deleteArgs], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
  return child;
}
