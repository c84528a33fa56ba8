// A QEMU guest running Debian's kernel: started from a state directory it owns, ready when its init says so on
// the control channel, running commands in the host's (read-only, overlaid) root, stopped by a clean poweroff and
// SIGKILL after a deadline, and swept (cleanup.ts) so that nothing remains: no QEMU, tap, namespace or file.
// QEMU runs under `setpriv --pdeathsig KILL`, so it dies with the process that started it; what that leaves (the
// namespace, the state directory) the next start in the same directory, or sweepGuests, removes.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { isAbsolute, join, posix, resolve } from 'node:path';
import { hostCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { createNamespace } from '@kube-proxy-ts/netns/namespace.js';
import { runChecked } from '@kube-proxy-ts/netns/exec.js';
import { macForAddress } from '@kube-proxy-ts/netns/link.js';
import { checkInterfaceName, checkNamespaceName } from '@kube-proxy-ts/netns/names.js';
import { ControlChannel, type GuestCommandResult } from './channel.js';
import { SpawnedProcess, type GuestProcess } from './process.js';
import { QEMU_PIDFILE, sweepGuest, writeGuestRecord } from './cleanup.js';
import { CONTROL_PORT_NAME, GUEST_SCRATCH_DIR, shareTag } from './init-script.js';
import { guestInitramfs } from './initramfs.js';
import { DEFAULT_VM_CACHE_DIR, debianKernel } from './kernel.js';

export type { GuestCommandResult } from './channel.js';
export type { GuestExit, GuestOutputChunk, GuestProcess, GuestStream } from './process.js';

/** The guest's one link: a virtio-net NIC on a tap in a network namespace (never the root namespace). */
export interface GuestNetwork {
  readonly namespace: string;
  /** Make the namespace (and so remove it on stop); otherwise it must exist, and only the tap is removed. */
  readonly createNamespace: boolean;
  readonly tap: string;
  /** The guest's eth0 address with its prefix length (198.18.0.0/15 in tests and the lab). */
  readonly guestAddress: string;
  /** An address for the tap's namespace side, with its prefix length (optional). */
  readonly hostAddress?: string;
  /** The guest's default gateway (optional). */
  readonly gateway?: string;
  /**
   * A bridge in the namespace to make the tap a port of (the lab's underlay bridge): the guest is then one more
   * host on that wire, beside the namespace nodes. Without it the tap is a point-to-point link to the namespace.
   */
  readonly bridge?: string;
  /** eth0's MAC address (default: one derived from guestAddress, as the lab's namespaces derive theirs). */
  readonly mac?: string;
}

/**
 * A host directory the guest mounts read-write (virtio-9p, no cache in the guest): a file either side writes there
 * is the other's at once (a lab node's pid files, container logs, ready files).
 */
export interface GuestShare {
  /** An existing directory on the host: an absolute path, normalised (no `..`, `//` or trailing `/`). */
  readonly hostPath: string;
  /** Where the guest's root has it (absolute, normalised, not `/`; default: hostPath, so paths mean the same). */
  readonly guestPath?: string;
}

export interface GuestOptions {
  /** The guest's own directory (a short path: the control socket's must fit 107 bytes). Swept first. */
  readonly stateDir: string;
  readonly hostname?: string;
  readonly network?: GuestNetwork;
  /** Share `<stateDir>/scratch` read-write, mounted at /kpts/scratch in the guest (a share, mounted first). */
  readonly scratch?: boolean;
  /** Host directories the guest mounts read-write, in this order (a path inside an earlier one is made there). */
  readonly shares?: readonly GuestShare[];
  /** Let the host's /tmp show through the guest's overlay (warm tsx caches carry over; writes stay in the guest). */
  readonly hostTmp?: boolean;
  readonly memoryMiB?: number;
  /**
   * Virtual CPUs (default 1). Under TCG each is a host thread (multi-threaded TCG), so more than one helps only a
   * guest whose work runs in parallel (a whole lab), and only while the host has cores to spare.
   */
  readonly cpus?: number;
  /**
   * QEMU's translation cache, in MiB (TCG's default is 1 GiB, which a Node.js run fills: QEMU's RSS then exceeds
   * the guest's memory twice over).
   */
  readonly translationCacheMiB?: number;
  readonly cacheDir?: string;
  /** How long boot may take before the start fails (TCG emulation: tens of seconds). */
  readonly readyTimeoutMs?: number;
}

export interface GuestRunOptions {
  readonly cwd?: string;
  /** Variables set for the command, beside PATH (the host's, since the guest runs the host's programs). */
  readonly env?: Readonly<Record<string, string>>;
  readonly stdin?: string;
  /** Kill the command (its process group) after this long; it then resolves with status 137. */
  readonly timeoutMs?: number;
}

export interface GuestSpawnOptions extends Omit<GuestRunOptions, 'timeoutMs'> {
  /** How much of each output the handle keeps for stdout(), stderr() and waitForOutput (default 1 Mi chars). */
  readonly keepChars?: number;
  /**
   * Keep its stdin open for `write()` and `end()` (after `stdin`, if given), as `kubectl exec -i` needs; otherwise
   * its stdin is `stdin` (default empty) and then end of file, as a container's without `stdin: true`.
   */
  readonly openStdin?: boolean;
}

export interface Guest {
  readonly stateDir: string;
  /** QEMU's pid. */
  readonly pid: number;
  /** `uname -r` in the guest, as its init reported it. */
  readonly release: string;
  /** From spawning QEMU to the guest's READY, in ms. */
  readonly bootMs: number;
  /** Resolves (never rejects) when QEMU has exited. */
  readonly exited: Promise<void>;
  /** Runs `command` (a shell script, or argv) in the guest. */
  run(command: string | readonly string[], options?: GuestRunOptions): Promise<GuestCommandResult>;
  /**
   * Starts `command` (a shell script, or argv: exec'd, so the process is the command itself) in the guest, in a
   * session of its own, and returns at once: its output follows as the guest reads it, `kill` signals it,
   * `exited` says when it ended. For what keeps running (a pod server, the kube-proxy agent).
   */
  spawn(command: string | readonly string[], options?: GuestSpawnOptions): GuestProcess;
  /** QEMU's resident memory, in KiB (0 once it has exited). */
  rssKiB(): number;
  /** What the guest printed on its serial console so far. */
  consoleLog(): string;
  /** Powers the guest off (SIGKILL after `timeoutMs`), then removes everything it left. */
  stop(options?: { timeoutMs?: number }): Promise<void>;
}

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The script a run sends: the host's PATH, the caller's variables and directory, then the command. */
export function commandScript(command: string | readonly string[], options: GuestRunOptions): string {
  const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', ...options.env };
  const exports = Object.entries(env).map(([k, v]) => `export ${k}=${quote(v)}`);
  const body = typeof command === 'string' ? command : `exec ${command.map(quote).join(' ')}`;
  return [...exports, `cd ${quote(options.cwd ?? '/')} || exit 126`, body].join('\n');
}

/** A share as QEMU and the guest's init get it. */
interface ShareMount {
  readonly tag: string;
  readonly hostPath: string;
  readonly guestPath: string;
}

function checkSharePath(path: string, side: string): void {
  const problem = !isAbsolute(path)
    ? 'is not absolute'
    : /[\n\r\0]/.test(path)
      ? 'has a line break or NUL in it'
      : posix.normalize(path) !== path || (path.endsWith('/') && path !== '/')
        ? `is not normalised (${posix.normalize(path).replace(/(.)\/$/, '$1')})`
        : undefined;
  if (problem !== undefined)
    throw new Error(`guest share: the ${side} path ${JSON.stringify(path)} ${problem}`);
}

/**
 * The guest's shares, scratch first, tagged share0, share1, …, and checked: what could not be passed whole to QEMU
 * (`-fsdev …,path=`: a comma is doubled, everything else goes as it is) and to init (the guest path base64 on the
 * kernel command line) fails here, before anything starts, naming the path.
 */
function shareMounts(o: GuestOptions): ShareMount[] {
  const scratch = o.scratch
    ? [{ hostPath: resolve(o.stateDir, 'scratch'), guestPath: GUEST_SCRATCH_DIR }]
    : [];
  const seen = new Set<string>();
  return [...scratch, ...(o.shares ?? [])].map((share, i) => {
    const guestPath = share.guestPath ?? share.hostPath;
    checkSharePath(share.hostPath, 'host');
    checkSharePath(guestPath, 'guest');
    if (guestPath === '/')
      throw new Error(`guest share: ${JSON.stringify(share.hostPath)} cannot hide the guest's root`);
    if (seen.has(guestPath))
      throw new Error(`guest share: two shares at ${JSON.stringify(guestPath)} in the guest`);
    seen.add(guestPath);
    if (i >= scratch.length) {
      let directory = false;
      try {
        directory = statSync(share.hostPath).isDirectory();
      } catch {
        // missing: said below
      }
      if (!directory)
        throw new Error(`guest share: ${JSON.stringify(share.hostPath)} is not a directory on the host`);
    }
    return { tag: shareTag(i), hostPath: share.hostPath, guestPath };
  });
}

/** Linux's limit on the kernel command line (x86: COMMAND_LINE_SIZE, with its NUL). */
const KERNEL_COMMAND_LINE_MAX = 2047;

/** The guest kernel's command line: how init learns its hostname, address, and where its shares go. */
function kernelCommandLine(o: GuestOptions, shares: readonly ShareMount[]): string {
  const cmdline = [
    'console=ttyS0',
    'quiet',
    'panic=-1',
    'mitigations=off',
    `kpts.hostname=${o.hostname ?? 'guest'}`,
  ];
  if (o.network) {
    cmdline.push(`kpts.ip=${o.network.guestAddress}`);
    if (o.network.gateway) cmdline.push(`kpts.gw=${o.network.gateway}`);
  }
  if (o.hostTmp) cmdline.push('kpts.hosttmp=1');
  if (shares.length > 0) {
    const paths = shares.map((s) => Buffer.from(s.guestPath, 'utf8').toString('base64'));
    cmdline.push(`kpts.shares=${paths.join(',')}`);
  }
  const line = cmdline.join(' ');
  if (line.length > KERNEL_COMMAND_LINE_MAX) {
    throw new Error(
      `guest shares: their guest paths make the kernel command line ${line.length} bytes, over Linux's ` +
        `${KERNEL_COMMAND_LINE_MAX}: ${shares.map((s) => JSON.stringify(s.guestPath)).join(', ')}`,
    );
  }
  return line;
}

function qemuArgs(
  o: GuestOptions,
  cmdline: string,
  shares: readonly ShareMount[],
  kernel: { vmlinuz: string },
  initrd: string,
): string[] {
  const dir = o.stateDir;
  const args = [
    ...[
      '-name',
      'kpts-guest',
      '-machine',
      'q35',
      '-accel',
      `tcg,tb-size=${o.translationCacheMiB ?? 256}`,
      '-cpu',
      'max',
      '-smp',
      String(o.cpus ?? 1),
    ],
    ...['-m', String(o.memoryMiB ?? 512), '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot'],
    ...['-pidfile', join(dir, QEMU_PIDFILE), '-kernel', kernel.vmlinuz, '-initrd', initrd],
    ...['-append', cmdline],
    ...['-chardev', `file,id=console,path=${join(dir, 'console.log')}`, '-serial', 'chardev:console'],
    ...['-chardev', `socket,id=ctl,path=${join(dir, 'ctl.sock')}`, '-device', 'virtio-serial-pci'],
    ...['-device', `virtserialport,chardev=ctl,name=${CONTROL_PORT_NAME}`],
    ...['-fsdev', 'local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap'],
    ...['-device', 'virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot', '-device', 'virtio-rng-pci'],
  ];
  for (const share of shares) {
    // security_model=none: the guest's root writes as QEMU's user (root), no ownership kept in xattrs.
    const path = share.hostPath.replace(/,/g, ',,');
    args.push('-fsdev', `local,id=${share.tag},path=${path},security_model=none,multidevs=remap`);
    args.push('-device', `virtio-9p-pci,fsdev=${share.tag},mount_tag=${share.tag}`);
  }
  if (o.network) {
    args.push('-netdev', `tap,id=net0,ifname=${o.network.tap},script=no,downscript=no`);
    const mac = o.network.mac ?? macForAddress(o.network.guestAddress.split('/')[0] ?? '');
    args.push('-device', `virtio-net-pci,netdev=net0,mac=${mac}`);
  }
  return args;
}

async function plugNetwork(network: GuestNetwork): Promise<void> {
  const { namespace: ns, tap } = network;
  checkNamespaceName(ns);
  checkInterfaceName(tap);
  if (network.createNamespace) await createNamespace(hostCommandRunner, ns);
  const ip = (action: string, args: string[]): Promise<string> =>
    runChecked(hostCommandRunner, action, 'ip', ['-n', ns, ...args]);
  await ip(`add tap ${tap} in ${ns}`, ['tuntap', 'add', 'dev', tap, 'mode', 'tap']);
  if (network.bridge) {
    checkInterfaceName(network.bridge);
    await ip(`plug ${tap} into ${network.bridge}`, ['link', 'set', tap, 'master', network.bridge]);
  }
  if (network.hostAddress) await ip(`address ${tap}`, ['addr', 'add', network.hostAddress, 'dev', tap]);
  await ip(`bring ${tap} up`, ['link', 'set', tap, 'up']);
}

/** Listens on the control socket before QEMU starts, so QEMU (the client) finds it at once. */
function listenControl(path: string): Promise<{ server: Server; connection: Promise<Socket> }> {
  return new Promise((resolve, reject) => {
    let accept!: (socket: Socket) => void;
    const connection = new Promise<Socket>((r) => (accept = r));
    const server = createServer((socket) => accept(socket));
    server.once('error', reject);
    server.listen(path, () => resolve({ server, connection }));
  });
}

function spawnQemu(o: GuestOptions, args: string[]): { child: ChildProcess; stderr: () => string } {
  const netns = o.network ? ['ip', 'netns', 'exec', o.network.namespace] : [];
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', ...netns, 'qemu-system-x86_64', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return { child, stderr: () => stderr };
}

function readConsole(stateDir: string): string {
  try {
    return readFileSync(join(stateDir, 'console.log'), 'utf8');
  } catch {
    return '';
  }
}

/** Boots a guest and resolves once its init is ready for commands; on any failure, leaves nothing behind. */
export async function startGuest(o: GuestOptions): Promise<Guest> {
  const shares = shareMounts(o);
  const cmdline = kernelCommandLine(o, shares);
  const cacheDir = o.cacheDir ?? DEFAULT_VM_CACHE_DIR;
  await sweepGuest(o.stateDir); // a crashed run's leftovers in this directory
  const kernel = await debianKernel(cacheDir);
  const initrd = await guestInitramfs(kernel, cacheDir);
  mkdirSync(o.scratch ? join(o.stateDir, 'scratch') : o.stateDir, { recursive: true });
  writeGuestRecord(o.stateDir, {
    version: 1,
    ownerPid: process.pid,
    ownsNamespace: o.network?.createNamespace ?? false,
    ...(o.network ? { namespace: o.network.namespace, tap: o.network.tap } : {}),
  });
  let server: Server | undefined;
  try {
    if (o.network) await plugNetwork(o.network);
    const control = await listenControl(join(o.stateDir, 'ctl.sock'));
    server = control.server;
    const started = Date.now();
    const { child, stderr } = spawnQemu(o, qemuArgs(o, cmdline, shares, kernel, initrd));
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const failed = exited.then(() => {
      throw new Error(`QEMU exited before the guest was ready: ${stderr().trim() || 'no message'}`);
    });
    failed.catch(() => {}); // raced below; after the guest is ready an exit is no longer a failure to start
    const readyTimeoutMs = o.readyTimeoutMs ?? 180_000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`guest not ready after ${readyTimeoutMs} ms`)),
        readyTimeoutMs,
      );
    });
    let channel: ControlChannel;
    let release: string;
    try {
      channel = new ControlChannel(await Promise.race([control.connection, failed, late]));
      release = await Promise.race([channel.ready, failed, late]);
    } catch (e) {
      child.kill('SIGKILL');
      await exited;
      const log = readConsole(o.stateDir).split('\n').slice(-30).join('\n');
      throw new Error(`${(e as Error).message}\n--- guest console (last lines) ---\n${log}`);
    } finally {
      clearTimeout(timer);
    }
    void exited.then(() => channel.fail('QEMU exited'));
    return guestHandle(o.stateDir, child, exited, channel, release, Date.now() - started, server);
  } catch (e) {
    server?.close();
    await sweepGuest(o.stateDir);
    throw e;
  }
}

function guestHandle(
  stateDir: string,
  child: ChildProcess,
  exited: Promise<void>,
  channel: ControlChannel,
  release: string,
  bootMs: number,
  server: Server,
): Guest {
  const pid = child.pid ?? 0;
  return {
    stateDir,
    pid,
    release,
    bootMs,
    exited,
    async run(command, options = {}) {
      const { id, result } = channel.run(commandScript(command, options), options.stdin ?? '');
      if (options.timeoutMs === undefined) return result;
      const timer = setTimeout(() => channel.kill(id), options.timeoutMs);
      try {
        return await result;
      } finally {
        clearTimeout(timer);
      }
    },
    spawn(command, options = {}) {
      const proc = new SpawnedProcess(channel, options.keepChars);
      return proc.start(commandScript(command, options), options.stdin ?? '', options.openStdin ?? false);
    },
    rssKiB() {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      } catch {
        return 0;
      }
    },
    consoleLog: () => readConsole(stateDir),
    async stop({ timeoutMs = 60_000 } = {}) {
      channel.poweroff();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([exited, deadline]);
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      server.close();
      await sweepGuest(stateDir);
    },
  };
}
