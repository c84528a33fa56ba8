// xtables-lock-contention: how long iptables commands waited for the xtables lock (our
// kubeproxy_iptables_lock_wait_seconds), and who holds the lock right now. iptables (legacy) takes a flock on
// $XTABLES_LOCKFILE, else /run/xtables.lock; /proc/locks lists every held lock by device and inode, so the
// holder is the PID on the line whose inode is the lock file's. Seed 003: syncs queue behind other writers
// (CNI plugins, firewalld, another kube-proxy) holding the lock during endpoint churn.
import type { CommandRunner } from '../../../netfilter/command.js';
import { histogram, sum } from '../../prometheus.js';
import type { DoctorCheck } from '../types.js';
import { finding } from '../types.js';
import { seconds } from './metrics-input.js';

export interface LockHolder {
  readonly pid: number;
  readonly kind: string;
  readonly access: string;
  readonly command: string;
}

interface ProcLock {
  readonly pid: number;
  readonly kind: string;
  readonly access: string;
}

/**
 * Lines of /proc/locks on the inode: `1: FLOCK  ADVISORY  WRITE 4242 00:1a:12345 0 EOF` holds it, and a blocked
 * waiter is listed under it as `1: -> FLOCK  ADVISORY  WRITE 4343 00:1a:12345 0 EOF`.
 */
function locksOnInode(text: string, inode: number): { holders: ProcLock[]; waiters: ProcLock[] } {
  const holders: ProcLock[] = [];
  const waiters: ProcLock[] = [];
  for (const line of text.split('\n')) {
    const all = line.trim().split(/\s+/);
    const waiting = all[1] === '->';
    const w = waiting ? [all[0], ...all.slice(2)] : all;
    if (w.length < 6) continue;
    const [, kind = '', , access = '', pid = '', dev = ''] = w;
    if (Number(dev.split(':')[2]) !== inode) continue;
    (waiting ? waiters : holders).push({ pid: Number(pid), kind, access });
  }
  return { holders, waiters };
}

/** The processes holding the lock on the inode (a waiter wants the lock, it does not hold it). */
export function holdersFromProcLocks(text: string, inode: number): ProcLock[] {
  return locksOnInode(text, inode).holders;
}

/** The processes blocked waiting for it: kube-proxy's lock probe (`flock -w`) or iptables-restore while it syncs. */
export function waitersFromProcLocks(text: string, inode: number): ProcLock[] {
  return locksOnInode(text, inode).waiters;
}

export interface LockState {
  readonly holders: readonly LockHolder[];
  readonly waiters: readonly LockHolder[];
}

export async function xtablesLockHolders(
  runner: CommandRunner,
  lockFile: string,
): Promise<LockState | string> {
  const st = await runner.run('stat', ['-L', '-c', '%i', lockFile]);
  if (st.code !== 0) return `no lock file ${lockFile} (${st.stderr.trim()})`;
  const inode = Number(st.stdout.trim());
  const locks = await runner.run('cat', ['/proc/locks']);
  if (locks.code !== 0) return `cannot read /proc/locks: ${locks.stderr.trim()}`;
  const withCommand = async (l: ProcLock): Promise<LockHolder> => {
    const ps = await runner.run('ps', ['-o', 'args=', '-p', String(l.pid)]);
    return { ...l, command: ps.code === 0 ? ps.stdout.trim() : '(gone)' };
  };
  const found = locksOnInode(locks.stdout, inode);
  return {
    holders: await Promise.all(found.holders.map(withCommand)),
    waiters: await Promise.all(found.waiters.map(withCommand)),
  };
}

export const xtablesLockContention: DoctorCheck = {
  id: 'xtables-lock-contention',
  title: 'xtables lock wait (kubeproxy_iptables_lock_wait_seconds) and who holds the lock now',
  async run(ctx) {
    const evidence: string[] = [];
    const lock = await xtablesLockHolders(ctx.runner, ctx.xtablesLockFile);
    const holders = typeof lock === 'string' ? [] : lock.holders;
    const waiters = typeof lock === 'string' ? [] : lock.waiters;
    if (typeof lock === 'string') evidence.push(lock);
    else if (holders.length === 0) evidence.push(`${ctx.xtablesLockFile}: not held now`);
    for (const h of holders)
      evidence.push(`${ctx.xtablesLockFile} held now by PID ${h.pid} (${h.kind} ${h.access}): ${h.command}`);
    for (const h of waiters)
      evidence.push(
        `${ctx.xtablesLockFile} waited for now by PID ${h.pid} (${h.kind} ${h.access}): ${h.command}`,
      );
    let waitP99: number | undefined;
    let longest: number | undefined;
    let pending = 0;
    if (!('error' in ctx.metrics)) {
      const h = histogram(ctx.metrics, 'kubeproxy_iptables_lock_wait_seconds');
      if (h && h.count > 0) {
        waitP99 = h.p99;
        longest = h.maxBucket;
        evidence.push(
          `${h.count} waits for the lock: p50 ${seconds(h.p50)}, p99 ${seconds(h.p99)}, longest ≤ ${seconds(h.maxBucket)}, ${seconds(h.sum)} in all (kubeproxy_iptables_lock_wait_seconds)`,
        );
      } else
        evidence.push(
          'kubeproxy_iptables_lock_wait_seconds: no wait recorded (nftables mode, or iptables-nft, which takes no lock)',
        );
      pending =
        (sum(ctx.metrics, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending') ?? 0) +
        (sum(ctx.metrics, 'kubeproxy_sync_proxy_rules_service_changes_pending') ?? 0);
      evidence.push(`${pending} changes pending`);
    }
    const others = holders.filter((h) => !/kube-proxy/.test(h.command));
    const who = others.map((h) => `PID ${h.pid} (${h.command})`).join(', ');
    const remedy =
      `Find what the holder is doing: cat /proc/${others[0]?.pid ?? '<PID>'}/cmdline | tr '\\0' ' '; ` +
      `it must take the lock with a timeout (iptables -w 5) and briefly. Make sure every iptables user on the node ` +
      `shares ${ctx.xtablesLockFile} (the DaemonSet mounts /run/xtables.lock from the host). Lasting relief: ` +
      `mode: nftables, which takes no xtables lock (kubectl -n kube-system edit configmap kube-proxy).`;
    // Syncs are held up now: changes wait for one, or one is blocked on the lock (its changes already checked out,
    // so nothing counts as pending; its lock probe or restore is the waiter /proc/locks lists).
    if (others.length > 0 && (pending > 0 || waiters.length > 0))
      return finding(
        'fail',
        `${who} holds the xtables lock while ` +
          (pending > 0
            ? `${pending} changes wait for a sync`
            : `a sync waits for it (${waiters.map((w) => `PID ${w.pid}: ${w.command}`).join(', ')})`),
        evidence,
        remedy,
      );
    if ((waitP99 ?? 0) >= 1)
      return finding(
        'fail',
        `iptables commands waited up to ${seconds(waitP99)} (p99) for the xtables lock`,
        evidence,
        remedy,
      );
    if (others.length > 0) return finding('warn', `${who} holds the xtables lock now`, evidence, remedy);
    if ((longest ?? 0) > 1)
      return finding(
        'warn',
        `an iptables command has waited about a second or more (bucket ≤ ${seconds(longest)}) for the xtables lock since start`,
        evidence,
        remedy,
      );
    // The measured wait includes starting `flock`, tens of ms on a busy node: only half a second is a signal.
    if ((waitP99 ?? 0) >= 0.5)
      return finding(
        'warn',
        `iptables commands wait ${seconds(waitP99)} (p99) for the xtables lock`,
        evidence,
        remedy,
      );
    return finding('ok', 'no contention for the xtables lock', evidence);
  },
};
