// Everything a guest leaves on the host is named in its state directory: guest.json (its namespace and tap, and
// whether it made the namespace), qemu.pid (QEMU's -pidfile), the control socket, the console log, the scratch
// directory. sweepGuest removes all of it from that record alone, so the same routine serves a clean stop, a start
// that finds a crashed run's leftovers, and a `lab down` from another process.
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { deleteNamespace, listNamespaces } from '@kube-proxy-ts/netns/namespace.js';

export interface GuestRecord {
  readonly version: 1;
  /** The process that started the guest (a sweep of a whole state root spares guests whose owner lives). */
  readonly ownerPid: number;
  readonly namespace?: string;
  /** True when the guest made `namespace`, and so removes it. */
  readonly ownsNamespace: boolean;
  readonly tap?: string;
}

export const GUEST_RECORD = 'guest.json';
export const QEMU_PIDFILE = 'qemu.pid';

export function writeGuestRecord(stateDir: string, record: GuestRecord): void {
  writeFileSync(join(stateDir, GUEST_RECORD), `${JSON.stringify(record)}\n`);
}

export function readGuestRecord(stateDir: string): GuestRecord | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(join(stateDir, GUEST_RECORD), 'utf8'));
    if (typeof value !== 'object' || value === null) return undefined;
    const r = value as Partial<GuestRecord>;
    if (r.version !== 1 || typeof r.ownerPid !== 'number' || typeof r.ownsNamespace !== 'boolean')
      return undefined;
    if (r.namespace !== undefined && typeof r.namespace !== 'string') return undefined;
    if (r.tap !== undefined && typeof r.tap !== 'string') return undefined;
    return r as GuestRecord;
  } catch {
    return undefined;
  }
}

/** True when `pid` is a live (not zombie) process. */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** QEMU's pid from the state directory's pidfile, when that process is alive and is this directory's QEMU. */
export function guestQemuPid(stateDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(join(stateDir, QEMU_PIDFILE), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !processAlive(pid)) return undefined;
  try {
    // A pid is reused once its process is gone: only a QEMU whose command line names this directory is ours.
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes(stateDir) ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function waitGone(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // Not a child of ours (a crashed run's QEMU): there is no exit event to wait for, only /proc to look at.
  while (processAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`QEMU ${pid} is still alive ${timeoutMs} ms after SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the polling pace
  }
}

/**
 * Removes a guest's every trace: kills its QEMU (SIGKILL: a clean poweroff is Guest.stop's job), deletes its tap
 * and, when the guest made it, its namespace, then the state directory. Missing pieces are fine.
 */
export async function sweepGuest(stateDir: string): Promise<void> {
  if (!existsSync(stateDir)) return;
  const pid = guestQemuPid(stateDir);
  if (pid !== undefined) {
    process.kill(pid, 'SIGKILL');
    await waitGone(pid, 10_000);
  }
  const record = readGuestRecord(stateDir);
  if (
    record?.namespace !== undefined &&
    (await listNamespaces(hostCommandRunner)).includes(record.namespace)
  ) {
    if (record.tap !== undefined) {
      await hostCommandRunner.run('ip', ['-n', record.namespace, 'link', 'del', record.tap]);
    }
    if (record.ownsNamespace) await deleteNamespace(hostCommandRunner, record.namespace);
  }
  rmSync(stateDir, { recursive: true, force: true });
}

/**
 * Sweeps every guest under `stateRoot` whose owner process is gone (or every one, with `all`), as a start and
 * `lab down` do. Resolves with the state directories swept.
 */
export async function sweepGuests(stateRoot: string, { all = false } = {}): Promise<string[]> {
  if (!existsSync(stateRoot)) return [];
  const swept: string[] = [];
  for (const name of readdirSync(stateRoot)) {
    const dir = join(stateRoot, name);
    const record = readGuestRecord(dir);
    if (record === undefined && !existsSync(join(dir, QEMU_PIDFILE))) continue; // not a guest's directory
    if (!all && record !== undefined && processAlive(record.ownerPid)) continue;
    await sweepGuest(dir);
    swept.push(dir);
  }
  return swept;
}
