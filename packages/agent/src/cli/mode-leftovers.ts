// What each mode leaves behind for the others to remove: `--cleanup` removes all three modes' state; a mode's own
// start removes the other two modes' leftovers once its first syncs are done (src/sync/mode-switch.ts). iptables
// and ipvs mode share some chains (nat KUBE-SERVICES, KUBE-POSTROUTING, KUBE-MARK-MASQ, filter KUBE-FORWARD,
// KUBE-PROXY-FIREWALL) and some identical jumps into them: those belong to whichever of the two is running, so
// removing the other's leftovers keeps them.
import { cleanupIptables, OWNED_CHAINS } from '../backends/iptables/cleanup.js';
import { JUMP_RULES, jumpArgs as iptablesJumpArgs } from '../backends/iptables/jumps.js';
import { cleanupIpvs, ipvsModeRan, jumpKey } from '../backends/ipvs/cleanup.js';
import {
  FILTER_CHAINS,
  IPVS_JUMPS,
  jumpArgs as ipvsJumpArgs,
  NAT_CHAINS,
} from '../backends/ipvs/iptables.js';
import { cleanupNftables } from '../backends/nftables/backend.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import type { CommandRunner } from '../netfilter/command.js';

export interface LeftoverReport {
  readonly mode: ProxyMode;
  /** What was removed, one entry per chain, set, link or group of virtual servers. */
  readonly removed: readonly string[];
  readonly errors: readonly string[];
}

const IPVS_CHAINS: ReadonlySet<string> = new Set([
  ...NAT_CHAINS.map((c) => `nat ${c}`),
  ...FILTER_CHAINS.map((c) => `filter ${c}`),
]);
const IPVS_JUMP_KEYS: ReadonlySet<string> = new Set(
  IPVS_JUMPS.map((j) => jumpKey(j.table, j.from, ipvsJumpArgs(j))),
);
const IPTABLES_CHAINS: ReadonlySet<string> = new Set(
  Object.entries(OWNED_CHAINS).flatMap(([table, chains]) => chains.map((c) => `${table} ${c}`)),
);
const IPTABLES_JUMP_KEYS: ReadonlySet<string> = new Set(
  JUMP_RULES.map((j) => jumpKey(j.table, j.from, iptablesJumpArgs(j))),
);

async function nftablesLeftovers(commands: CommandRunner): Promise<LeftoverReport> {
  const errors = await cleanupNftables(commands);
  return { mode: 'nftables', removed: [], errors: errors.map((e) => e.message) };
}

async function iptablesLeftovers(commands: CommandRunner, sharedWithIpvs: boolean): Promise<LeftoverReport> {
  const r = await cleanupIptables(
    commands,
    'auto',
    sharedWithIpvs ? { keepChains: IPVS_CHAINS, keepJumps: IPVS_JUMP_KEYS } : {},
  );
  return { mode: 'iptables', removed: r.deletedChains, errors: r.errors };
}

async function ipvsLeftovers(
  commands: CommandRunner,
  sharedWithIptables: boolean,
  always: boolean,
): Promise<LeftoverReport> {
  const r = await cleanupIpvs(commands, {
    ...(sharedWithIptables ? { keepChains: IPTABLES_CHAINS, keepJumps: IPTABLES_JUMP_KEYS } : {}),
    onlyAfterIpvsMode: !always,
  });
  return { mode: 'ipvs', ...r };
}

/** The other modes' state, removed as a node running `mode` must (its own shared chains kept). */
export async function removeOtherModes(mode: ProxyMode, commands: CommandRunner): Promise<LeftoverReport[]> {
  switch (mode) {
    case 'nftables':
      return bothXtablesModes(commands, false);
    case 'iptables':
      return [await nftablesLeftovers(commands), await ipvsLeftovers(commands, true, false)];
    case 'ipvs':
      return [await nftablesLeftovers(commands), await iptablesLeftovers(commands, true)];
  }
}

/**
 * Both iptables-based modes: iptables mode's own chains and jumps first (the shared ones kept), then ipvs mode's
 * with the shared ones, whose last jumps are ipvs mode's identical ones, then its ipsets, which no rule matches by
 * then.
 */
async function bothXtablesModes(commands: CommandRunner, always: boolean): Promise<LeftoverReport[]> {
  // Without ipvs mode's state here, iptables mode's cleanup must take the shared chains and jumps too.
  if (!always && !(await ipvsModeRan(commands))) return [await iptablesLeftovers(commands, false)];
  return [await iptablesLeftovers(commands, true), await ipvsLeftovers(commands, false, always)];
}

/** Every mode's state (`--cleanup`), IPVS flushed whoever made it, as upstream's cleanup does. */
export async function removeAllModes(commands: CommandRunner): Promise<LeftoverReport[]> {
  return [await nftablesLeftovers(commands), ...(await bothXtablesModes(commands, true))];
}
