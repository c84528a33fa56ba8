// iptables mode's fixed scaffolding: the top-level KUBE-* chains, the jumps into them from the built-in chains,
// and the canary chains that reveal an external flush (upstream's iptables Monitor). Ensured on full syncs, one
// restore when the tables could be read, one command at a time when they could not; checked every syncPeriod.
import type { IptablesClient } from '../../netfilter/iptables/client.js';
import { IptablesError } from '../../netfilter/iptables/client.js';
import type { SavedTable } from '../../netfilter/iptables/parse.js';
import { serializeRestore } from '../../netfilter/iptables/serialize.js';
import type { IptablesRule, IptablesTableName, RestoreTable } from '../../netfilter/iptables/types.js';
import { IPTABLES_TABLES } from '../../netfilter/iptables/types.js';
import type { NodeNetworkConfig } from '../../sync/backend.js';
import type { Logger } from '../../util/logger.js';
import { JUMP_RULES, jumpArgs, jumpRulesFor } from './jumps.js';
import type { JumpRule } from './jumps.js';
import { KUBE_FORWARD, KUBE_PROXY_CANARY } from './naming.js';
import type { IptablesExtras } from './render.js';

/** Tables that hold the canary (upstream Monitor): mangle is the one polled first. */
export const CANARY_TABLES: readonly IptablesTableName[] = ['mangle', 'nat', 'filter'];

// One jump per table that an external flush (`iptables -t nat -F`) removes: upstream's empty canary chain
// survives a flush, so a flush alone would go unnoticed.
const SENTINEL_JUMPS: readonly JumpRule[] = JUMP_RULES.filter(
  (j) => (j.table === 'nat' && j.from === 'PREROUTING') || (j.table === 'filter' && j.to === KUBE_FORWARD),
);

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class IptablesBaseChains {
  private readonly client: IptablesClient;
  private readonly node: NodeNetworkConfig;
  private readonly extras: IptablesExtras;
  private readonly logger: Logger;

  constructor(client: IptablesClient, node: NodeNetworkConfig, extras: IptablesExtras, logger: Logger) {
    this.client = client;
    this.node = node;
    this.extras = extras;
    this.logger = logger;
  }

  /** The jump rules this node needs (kubelet's KUBE-FIREWALL ones only with IPv4 localhost NodePorts). */
  jumpRules(): readonly JumpRule[] {
    return jumpRulesFor(this.node, this.extras);
  }

  /**
   * Our chains, the jumps into them and the canaries (full syncs only, as upstream), given a dump of every table:
   * whatever is missing is created in one `--noflush` restore (`:CHAIN` lines for missing chains only, so nothing
   * existing is flushed; `-I` lines in upstream's order, so the jumps end up where upstream's `-C`/`-I` sequence
   * puts them). A jump the dump does not show although its chain exists is checked with `-C` first, in case
   * iptables-save printed it differently. Resolves the lock wait of that restore, ms.
   */
  async ensure(saved: ReadonlyMap<IptablesTableName, SavedTable>): Promise<number> {
    const chains = new Map<IptablesTableName, string[]>();
    const inserts = new Map<IptablesTableName, IptablesRule[]>();
    const addChain = (table: IptablesTableName, chain: string): void => {
      const list = chains.get(table) ?? [];
      if (!list.includes(chain)) list.push(chain);
      chains.set(table, list);
    };
    for (const j of this.jumpRules()) {
      const t = saved.get(j.table);
      const args = jumpArgs(j);
      const chainExists = t?.chains.has(j.to) ?? false;
      if (!chainExists) addChain(j.table, j.to);
      const listed = (t?.rules.get(j.from) ?? []).some((r) => sameArgs(r, args));
      if (listed || (chainExists && (await this.client.ruleExists(j.table, j.from, args)))) continue;
      const list = inserts.get(j.table) ?? [];
      list.push({ chain: j.from, args });
      inserts.set(j.table, list);
    }
    for (const table of CANARY_TABLES) {
      if (!(saved.get(table)?.chains.has(KUBE_PROXY_CANARY) ?? false)) addChain(table, KUBE_PROXY_CANARY);
    }
    const tables: RestoreTable[] = [];
    for (const table of IPTABLES_TABLES) {
      const c = chains.get(table) ?? [];
      const i = inserts.get(table) ?? [];
      if (c.length > 0 || i.length > 0)
        tables.push({ table, chains: c, inserts: i, rules: [], deleteChains: [] });
    }
    if (tables.length === 0) return 0;
    return (await this.client.restore(serializeRestore({ tables }))).lockWaitMs;
  }

  /** The same, one command at a time (`-N`; `-C` then `-I`), when the tables could not be read. */
  async ensureOneByOne(): Promise<void> {
    for (const j of this.jumpRules()) {
      await this.client.ensureChain(j.table, j.to);
      await this.client.ensureRule('prepend', j.table, j.from, jumpArgs(j));
    }
    for (const table of CANARY_TABLES) await this.client.ensureChain(table, KUBE_PROXY_CANARY);
  }

  /**
   * False when someone flushed or replaced our tables: a canary chain is gone, or a sentinel jump into
   * KUBE-SERVICES / KUBE-FORWARD is.
   */
  async present(): Promise<boolean> {
    let missing: string | undefined;
    for (const table of CANARY_TABLES) {
      if (!(await this.client.chainExists(table, KUBE_PROXY_CANARY))) {
        missing = `${table} ${KUBE_PROXY_CANARY}`;
        break;
      }
    }
    if (missing === undefined) {
      for (const j of SENTINEL_JUMPS) {
        // A jump whose target chain is gone makes -C fail with a usage error rather than "no such rule".
        const present = await this.client.ruleExists(j.table, j.from, jumpArgs(j)).catch((error: unknown) => {
          if (error instanceof IptablesError) return false;
          throw error;
        });
        if (!present) {
          missing = `${j.table} ${j.from} -j ${j.to}`;
          break;
        }
      }
    }
    if (missing === undefined) return true;
    this.logger.info('iptables canary gone: rules were flushed or replaced; forcing a full sync', {
      missing,
    });
    return false;
  }
}
