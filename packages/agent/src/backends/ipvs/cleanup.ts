// Removes what ipvs mode made (upstream ipvs CleanupLeftovers): every virtual server, kube-ipvs0, the jumps into
// its chains and the chains, then its ipsets (only once no rule matches them). For `kube-proxy-ts --cleanup`
// (everything) and for another mode's start (`except`: the chains and jumps that mode shares with ipvs mode by
// name and rule, which are the new mode's now). Both families; what cannot be done is reported, not fatal.
import type { IPFamily } from '../../model/ip.js';
import type { CommandRunner } from '../../netfilter/command.js';
import { IPSetClient } from '../../netfilter/ipset/client.js';
import { allKubeIPSetNames } from '../../netfilter/ipset/sets.js';
import { IptablesClient } from '../../netfilter/iptables/client.js';
import { chainsInSave } from '../../netfilter/iptables/parse.js';
import { serializeRestore } from '../../netfilter/iptables/serialize.js';
import type { RestoreTable } from '../../netfilter/iptables/types.js';
import { openIpvs } from '../../netfilter/ipvs/client.js';
import type { IpvsHandle } from '../../netfilter/ipvs/types.js';
import type { Clock } from '../../util/clock.js';
import { errorMessage } from '../../util/error-message.js';
import { FILTER_CHAINS, IPVS_JUMPS, jumpArgs, NAT_CHAINS } from './iptables.js';
import { DUMMY_DEVICE } from './plan.js';

export interface IpvsCleanupOptions {
  /** "nat KUBE-SERVICES": chains another mode owns now; left in place. */
  readonly keepChains?: ReadonlySet<string>;
  /** "nat PREROUTING -m comment …": jumps another mode makes identically; left in place. */
  readonly keepJumps?: ReadonlySet<string>;
  /**
   * Only when kube-ipvs0 shows that ipvs mode ran here: another mode's start must not flush virtual servers that
   * something else on the node owns (upstream's nftables mode flushes them all; `--cleanup` does too).
   */
  readonly onlyAfterIpvsMode?: boolean;
  /** IPVS in this namespace (default: opened here; a kernel without IPVS has nothing to flush). */
  readonly ipvs?: () => IpvsHandle | { readonly error: string; readonly reason: string };
}

export interface IpvsCleanupResult {
  readonly removed: readonly string[];
  readonly errors: readonly string[];
}

const wallClock: Clock = {
  now: () => Date.now(),
  setTimeout: () => ({ id: 0 }),
  clearTimeout: () => {},
};

/** Whether ipvs mode ran in this namespace: it leaves kube-ipvs0 behind (upstream's too). */
export async function ipvsModeRan(commands: CommandRunner): Promise<boolean> {
  return (await commands.run('ip', ['-o', 'link', 'show', 'dev', DUMMY_DEVICE])).code === 0;
}

/** The key of a jump, as IpvsCleanupOptions.keepJumps names it. */
export function jumpKey(table: string, from: string, args: readonly string[]): string {
  return [table, from, ...args].join(' ');
}

export async function cleanupIpvs(
  commands: CommandRunner,
  options: IpvsCleanupOptions = {},
): Promise<IpvsCleanupResult> {
  const removed: string[] = [];
  const errors: string[] = [];
  if (options.onlyAfterIpvsMode === true && !(await ipvsModeRan(commands))) return { removed, errors };
  flushIpvs(options, removed, errors);
  const link = await commands.run('ip', ['link', 'del', DUMMY_DEVICE]);
  if (link.code === 0) removed.push(`link ${DUMMY_DEVICE}`);
  else if (!/Cannot find device|does not exist/.test(link.stderr))
    errors.push(`${DUMMY_DEVICE}: ${link.stderr.trim()}`);
  for (const family of ['IPv4', 'IPv6'] as const)
    await cleanupChains(commands, family, options, removed, errors);
  await destroySets(commands, removed, errors);
  return { removed, errors };
}

function flushIpvs(options: IpvsCleanupOptions, removed: string[], errors: string[]): void {
  const opened = (options.ipvs ?? openIpvs)();
  if ('error' in opened) {
    // No IPVS in this kernel: there can be no virtual server to remove.
    if (opened.reason !== 'no-family') errors.push(`IPVS: ${opened.error}`);
    return;
  }
  try {
    const listed = opened.listVirtualServers();
    const count = listed.ok ? listed.value.length : 0;
    const r = opened.flush();
    if (!r.ok) errors.push(`IPVS: ${r.message}`);
    else if (count > 0) removed.push(`${count} IPVS virtual servers`);
  } finally {
    opened.close();
  }
}

async function cleanupChains(
  commands: CommandRunner,
  family: IPFamily,
  options: IpvsCleanupOptions,
  removed: string[],
  errors: string[],
): Promise<void> {
  const client = new IptablesClient({ family, commands, clock: wallClock });
  try {
    await client.version();
  } catch (error) {
    errors.push(`${family}: ${errorMessage(error)}`);
    return;
  }
  for (const j of IPVS_JUMPS) {
    if (options.keepJumps?.has(jumpKey(j.table, j.from, jumpArgs(j)))) continue;
    try {
      if (await client.deleteRule(j.table, j.from, jumpArgs(j)))
        removed.push(`${family} jump ${j.from} → ${j.to}`);
    } catch {
      // -C fails when the target chain does not exist: there is no such jump then.
    }
  }
  const tables: RestoreTable[] = [];
  for (const [table, ours] of [
    ['nat', NAT_CHAINS],
    ['filter', FILTER_CHAINS],
  ] as const) {
    let existing: Set<string>;
    try {
      existing = chainsInSave(await client.save(table), table);
    } catch (error) {
      errors.push(`${family} ${table}: ${errorMessage(error)}`);
      continue;
    }
    const victims = ours.filter((c) => existing.has(c) && !options.keepChains?.has(`${table} ${c}`));
    if (victims.length === 0) continue;
    tables.push({ table, chains: victims, rules: [], deleteChains: victims });
    for (const c of victims) removed.push(`${family} ${table} ${c}`);
  }
  if (tables.length === 0) return;
  try {
    await client.restore(serializeRestore({ tables }));
  } catch (error) {
    errors.push(`${family} restore: ${errorMessage(error)}`);
  }
}

async function destroySets(commands: CommandRunner, removed: string[], errors: string[]): Promise<void> {
  const ipset = new IPSetClient({ commands });
  let present: Set<string>;
  try {
    present = new Set(await ipset.listNames());
  } catch (error) {
    // No ipset tool: ipvs mode never ran here (it refuses to start without one).
    void error;
    return;
  }
  for (const name of allKubeIPSetNames()) {
    if (!present.has(name)) continue;
    try {
      if (await ipset.destroy(name)) removed.push(`ipset ${name}`);
    } catch (error) {
      errors.push(errorMessage(error));
    }
  }
}
