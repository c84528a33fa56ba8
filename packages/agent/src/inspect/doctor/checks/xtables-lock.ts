// xtables-lock-contention: how long iptables commands waited for the xtables lock (our
// kubeproxy_iptables_lock_wait_seconds), and who holds the lock right now. iptables (legacy) takes a flock on
// $XTABLES_LOCKFILE, else /run/xtables.lock; /proc/locks lists every held lock by device and inode, so the
// holder is the PID on the line whose inode is the lock file's. Seed 003: syncs queue behind other writers
// (CNI plugins, firewalld, another kube-proxy) holding the lock during endpoint churn.
import type { CommandRunner } from '../../../netfilter/command.js';
import { histogram, sum } from '../prometheus.js';
import type { DoctorCheck } from '../types.js';
import { finding } from '../types.js';
import { seconds } from './metrics-input.js';

export interface LockHolder {
  readonly pid: number;
  readonly kind: string;
  readonly access: string;
  readonly command: string;
}

/** Lines of /proc/locks on the inode: `1: FLOCK  ADVISORY  WRITE 4242 00:1a:12345 0 EOF`. */
export function holdersFromProcLocks(
  text: string,
  inode: number,
): { pid: number; kind: string; access: string }[] {
  const out: { pid: number; kind: string; access: string }[] = [];
  for (const line of text.split('\n')) {
    const w = line.trim().split(/\s+/);
    // A blocked waiter is listed as "1: -> FLOCK …": it wants the lock, it does not hold it.
    if (w.length < 6 || w[1] === '->') continue;
    const [, kind = '', , access = '', pid = '', dev = ''] = w;
    const ino = Number(dev.split(':')[2]);
    if (ino === inode) out.push({ pid: Number(pid), kind, access });
  }
  return out;
}

export async function xtablesLockHolders(
  runner: CommandRunner,
  lockFile: string,
): Promise<LockHolder[] | string> {
  const st = await runner.run('stat', ['-L', '-c', '%i', lockFile]);
  if (st.code !== 0) return `no lock file ${lockFile} (${st.stderr.trim()})`;
  const inode = Number(st.stdout.trim());
  const locks = await runner.run('cat', ['/proc/locks']);
  if (locks.code !== 0) return `cannot read /proc/locks: ${locks.stderr.trim()}`;
  const holders: LockHolder[] = [];
  for (const h of holdersFromProcLocks(locks.stdout, inode)) {
    const ps = await runner.run('ps', ['-o', 'args=', '-p', String(h.pid)]);
    holders.push({ ...h, command: ps.code === 0 ? ps.stdout.trim() : '(gone)' });
  }
  return holders;
}

export const xtablesLockContention: DoctorCheck = {
  id: 'xtables-lock-contention',
  title: 'xtables lock wait (kubeproxy_iptables_lock_wait_seconds) and who holds the lock now',
  async run(ctx) {
    const id = this.id;
    const evidence: string[] = [];
    const holders = await xtablesLockHolders(ctx.runner, ctx.xtablesLockFile);
    if (typeof holders === 'string') evidence.push(holders);
    else if (holders.length === 0) evidence.push(`${ctx.xtablesLockFile}: not held now`);
    else
      for (const h of holders)
        evidence.push(
          `${ctx.xtablesLockFile} held now by PID ${h.pid} (${h.kind} ${h.access}): ${h.command}`,
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
    const others = typeof holders === 'string' ? [] : holders.filter((h) => !/kube-proxy/.test(h.command));
    const who = others.map((h) => `PID ${h.pid} (${h.command})`).join(', ');
    const remedy =
      `Find what the holder is doing: cat /proc/${others[0]?.pid ?? '<PID>'}/cmdline | tr '\\0' ' '; ` +
      `it must take the lock with a timeout (iptables -w 5) and briefly. Make sure every iptables user on the node ` +
      `shares ${ctx.xtablesLockFile} (the DaemonSet mounts /run/xtables.lock from the host). Lasting relief: ` +
      `mode: nftables, which takes no xtables lock (kubectl -n kube-system edit configmap kube-proxy).`;
    if (others.length > 0 && pending > 0)
      return finding(
        id,
        'fail',
        `${who} holds the xtables lock while ${pending} changes wait for a sync`,
        evidence,
        remedy,
      );
    if ((waitP99 ?? 0) >= 1)
      return finding(
        id,
        'fail',
        `iptables commands waited up to ${seconds(waitP99)} (p99) for the xtables lock`,
        evidence,
        remedy,
      );
    if (others.length > 0) return finding(id, 'warn', `${who} holds the xtables lock now`, evidence, remedy);
    if ((longest ?? 0) > 1)
      return finding(
        id,
        'warn',
        `an iptables command has waited about a second or more (bucket ≤ ${seconds(longest)}) for the xtables lock since start`,
        evidence,
        remedy,
      );
    // The measured wait includes starting `flock`, tens of ms on a busy node: only half a second is a signal.
    if ((waitP99 ?? 0) >= 0.5)
      return finding(
        id,
        'warn',
        `iptables commands wait ${seconds(waitP99)} (p99) for the xtables lock`,
        evidence,
        remedy,
      );
    return finding(id, 'ok', 'no contention for the xtables lock', evidence);
  },
};
