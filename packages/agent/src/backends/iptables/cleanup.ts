// Removes everything iptables mode made (upstream CleanupLeftovers, §2.7): the jumps from the built-in chains,
// then, in one --noflush restore per table, a flush (chain line) and `-X` of each of our chains found by
// iptables-save. For `kube-proxy-ts --cleanup` and for nftables mode's start. Both families; a family whose
// binaries are missing is reported, not fatal.
import type { IPFamily } from '../../model/ip.js';
import type { CommandRunner } from '../../netfilter/command.js';
import { IptablesClient } from '../../netfilter/iptables/client.js';
import { chainsInSave } from '../../netfilter/iptables/parse.js';
import { serializeRestore } from '../../netfilter/iptables/serialize.js';
import type { IptablesTableName, RestoreTable } from '../../netfilter/iptables/types.js';
import type { IptablesVariant } from '../../netfilter/iptables/variant.js';
import type { Clock } from '../../util/clock.js';
import { JUMP_RULES, jumpArgs, KUBELET_JUMP_RULES } from './jumps.js';
import {
  isServiceChainName,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_CANARY,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  KUBELET_FIREWALL,
} from './naming.js';

export const OWNED_CHAINS: Readonly<Record<'nat' | 'filter' | 'mangle', readonly string[]>> = {
  nat: [KUBE_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_MARK_MASQ, KUBE_PROXY_CANARY],
  filter: [
    KUBE_SERVICES,
    KUBE_EXTERNAL_SERVICES,
    KUBE_FORWARD,
    KUBE_NODEPORTS,
    KUBE_PROXY_FIREWALL,
    KUBELET_FIREWALL,
    KUBE_PROXY_CANARY,
  ],
  mangle: [KUBE_PROXY_CANARY],
};

export interface CleanupResult {
  /** "IPv4 nat KUBE-SVC-…" for every chain deleted. */
  readonly deletedChains: readonly string[];
  /** What could not be done, each naming the family and step. */
  readonly errors: readonly string[];
}

const wallClock: Clock = {
  now: () => Date.now(),
  setTimeout: () => ({ id: 0 }),
  clearTimeout: () => {},
};

export async function cleanupIptables(
  commands: CommandRunner,
  variant: IptablesVariant = 'auto',
  options: {
    readonly families?: readonly IPFamily[];
    readonly lockFile?: string;
    /** "nat KUBE-SERVICES": chains another mode (ipvs) owns now by the same name; left in place. */
    readonly keepChains?: ReadonlySet<string>;
    /** "nat PREROUTING <args…>": jumps another mode makes identically; left in place. */
    readonly keepJumps?: ReadonlySet<string>;
  } = {},
): Promise<CleanupResult> {
  const deletedChains: string[] = [];
  const errors: string[] = [];
  for (const family of options.families ?? (['IPv4', 'IPv6'] as const)) {
    const client = new IptablesClient({
      family,
      commands,
      clock: wallClock,
      variant,
      lockFile: options.lockFile,
    });
    try {
      await client.version();
    } catch (error) {
      errors.push(`${family}: ${String(error)}`);
      continue;
    }
    for (const j of [...JUMP_RULES, ...KUBELET_JUMP_RULES]) {
      if (options.keepJumps?.has([j.table, j.from, ...jumpArgs(j)].join(' '))) continue;
      try {
        // Bounded: a jump added several times by hand is removed up to a few times.
        for (let i = 0; i < 5 && (await client.deleteRule(j.table, j.from, jumpArgs(j))); i++);
      } catch (error) {
        // -C fails with a usage error when the target chain no longer exists: nothing to delete then.
        void error;
      }
    }
    const tables: RestoreTable[] = [];
    for (const table of ['nat', 'filter', 'mangle'] as const satisfies readonly IptablesTableName[]) {
      let existing: Set<string>;
      try {
        existing = chainsInSave(await client.save(table), table);
      } catch (error) {
        errors.push(`${family} ${table}: ${String(error)}`);
        continue;
      }
      const victims = [...existing]
        .filter((c) => OWNED_CHAINS[table].includes(c) || (table === 'nat' && isServiceChainName(c)))
        .filter((c) => !options.keepChains?.has(`${table} ${c}`))
        .sort();
      if (victims.length === 0) continue;
      tables.push({ table, chains: victims, rules: [], deleteChains: victims });
      for (const c of victims) deletedChains.push(`${family} ${table} ${c}`);
    }
    if (tables.length === 0) continue;
    try {
      await client.restore(serializeRestore({ tables }));
    } catch (error) {
      errors.push(`${family} restore: ${String(error)}`);
    }
  }
  return { deletedChains, errors };
}
