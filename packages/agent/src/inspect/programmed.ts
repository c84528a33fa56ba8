// `explain --programmed`: each kernel object a port should have, looked up in the node's live table: present,
// missing, or different (with what differs); in ipvs mode, its virtual servers (scheduler and real servers) and
// ipset entries. nft rules are listed back as expressions, not text, so a chain is
// compared by its rule count; set and map elements by key and value. iptables-save prints a rule's matches in
// its own order, so each rule is asked for with `-C` (the kernel's own comparison), and a chain by its rule count.
import { nftFamilyOf } from '../backends/nftables/backend.js';
import { TABLE_NAME } from '../backends/nftables/naming.js';
import { UPSTREAM_ELEMENT_CONTAINERS } from '../backends/nftables/upstream-layout.js';
import type { CommandRunner } from '../netfilter/command.js';
import { isNotFound } from '../netfilter/nft/errors.js';
import { NftCommandExecutor } from '../netfilter/nft/executor.js';
import type { NftListing } from '../netfilter/nft/executor.js';
import { IptablesClient } from '../netfilter/iptables/client.js';
import { readSave } from '../netfilter/iptables/parse.js';
import type { SavedTable } from '../netfilter/iptables/parse.js';
import type { IPFamily } from '../model/ip.js';
import { systemClock } from '../util/clock.js';
import type { KernelCheck, KernelObject } from './explain.js';
import { ipvsServiceText } from './ipvs-objects.js';
import { IPSetClient } from '../netfilter/ipset/client.js';
import { openIpvs } from '../netfilter/ipvs/client.js';
import { realServerKey, virtualServerKey } from '../netfilter/ipvs/types.js';

export type ProgrammedState = 'present' | 'missing' | 'different';

export interface ProgrammedObject {
  readonly object: string;
  readonly state: ProgrammedState;
  /** For `different`: what the kernel holds instead. */
  readonly difference?: string;
}

/** What the node's kernel holds, as explain --programmed reads it. */
export interface KernelReader {
  /** nft: the table's listing, or undefined when the table does not exist. */
  nftListing(): Promise<NftListing | undefined>;
  /** nft: a set's or map's elements, key → value ("" for a set). */
  nftElements(set: string): Promise<ReadonlyMap<string, string>>;
  /** iptables: one table's chains and the rules of every chain. */
  iptablesTable(table: 'filter' | 'nat'): Promise<SavedTable>;
  /** iptables: whether `-A chain args` is in the table (`iptables -C`). */
  iptablesRuleExists(table: 'filter' | 'nat', chain: string, args: readonly string[]): Promise<boolean>;
  /** IPVS: every virtual server by virtualServerKey, with its service text and real servers as the checks spell them. */
  ipvsVirtualServers(): Promise<ReadonlyMap<string, { service: string; realServers: readonly string[] }>>;
  /** ipset: one set's entries, as `ipset save` prints them (empty when the set does not exist). */
  ipsetEntries(set: string): Promise<ReadonlySet<string>>;
}

/** Reads the live tables of this host's current network namespace through `commands`. */
export function liveKernelReader(family: IPFamily, commands: CommandRunner): KernelReader {
  const nft = new NftCommandExecutor({ family: nftFamilyOf(family), table: TABLE_NAME }, commands);
  const ipt = new IptablesClient({ family, commands, clock: systemClock });
  const kinds = new Map<string, 'set' | 'map'>(UPSTREAM_ELEMENT_CONTAINERS.map((c) => [c.name, c.kind]));
  return {
    async nftListing() {
      try {
        return await nft.list();
      } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
      }
    },
    async nftElements(set) {
      try {
        const elements = await nft.listElements(kinds.get(set) ?? 'set', set);
        return new Map(elements.map((e) => [e.key.join(' . '), (e.value ?? []).join(' . ')]));
      } catch (e) {
        if (isNotFound(e)) return new Map();
        throw e;
      }
    },
    async iptablesTable(table) {
      const text = await ipt.save(table);
      return readSave(text, () => true).get(table) ?? { chains: new Set(), rules: new Map() };
    },
    async iptablesRuleExists(table, chain, args) {
      return ipt.ruleExists(table, chain, args).catch(() => false);
    },
    ipvsVirtualServers: () => Promise.resolve(readIpvs()),
    async ipsetEntries(set) {
      const saved = await new IPSetClient({ commands }).save([set]);
      return saved.get(set)?.entries ?? new Set();
    },
  };
}

/**
 * IPVS of this process's network namespace, through the agent's own client (explain runs on the node, as the
 * agent does). A kernel without IPVS holds no virtual server.
 */
function readIpvs(): Map<string, { service: string; realServers: readonly string[] }> {
  const out = new Map<string, { service: string; realServers: readonly string[] }>();
  const ipvs = openIpvs();
  if ('error' in ipvs) {
    if (ipvs.reason === 'no-family') return out;
    throw new Error(ipvs.error);
  }
  try {
    const listed = ipvs.listVirtualServers();
    if (!listed.ok) throw new Error(listed.message);
    for (const vs of listed.value) {
      const real = ipvs.listRealServers(vs);
      if (!real.ok) throw new Error(real.message);
      out.set(virtualServerKey(vs), {
        service: ipvsServiceText(vs),
        realServers: real.value.map((rs) => `${realServerKey(rs)} w${rs.weight}`).sort(),
      });
    }
    return out;
  } finally {
    ipvs.close();
  }
}

/** Looks every object up; reads each table or set once. */
export async function checkProgrammed(
  objects: readonly KernelObject[],
  kernel: KernelReader,
): Promise<ProgrammedObject[]> {
  let listing: Promise<NftListing | undefined> | undefined;
  const elements = new Map<string, Promise<ReadonlyMap<string, string>>>();
  const tables = new Map<string, Promise<SavedTable>>();
  const nftListing = (): Promise<NftListing | undefined> => (listing ??= kernel.nftListing());
  const setElements = (set: string): Promise<ReadonlyMap<string, string>> => {
    let p = elements.get(set);
    if (p === undefined) elements.set(set, (p = kernel.nftElements(set)));
    return p;
  };
  const table = (name: 'filter' | 'nat'): Promise<SavedTable> => {
    let p = tables.get(name);
    if (p === undefined) tables.set(name, (p = kernel.iptablesTable(name)));
    return p;
  };

  let ipvs: Promise<ReadonlyMap<string, { service: string; realServers: readonly string[] }>> | undefined;
  const sets = new Map<string, Promise<ReadonlySet<string>>>();
  const setEntries = (set: string): Promise<ReadonlySet<string>> => {
    let p = sets.get(set);
    if (p === undefined) sets.set(set, (p = kernel.ipsetEntries(set)));
    return p;
  };
  const check = async (c: KernelCheck): Promise<Omit<ProgrammedObject, 'object'>> => {
    switch (c.kind) {
      case 'nft-element': {
        const held = (await setElements(c.set)).get(c.key);
        if (held === undefined) return { state: 'missing' };
        const want = c.value ?? '';
        return held === want ? { state: 'present' } : { state: 'different', difference: `value ${held}` };
      }
      case 'nft-chain': {
        const l = await nftListing();
        if (l === undefined || !l.chains.some((x) => x.name === c.chain)) return { state: 'missing' };
        const rules = l.rules.filter((r) => r.chain === c.chain).length;
        return rules === c.rules
          ? { state: 'present' }
          : { state: 'different', difference: `${rules} rules, not ${c.rules}` };
      }
      case 'nft-set': {
        const l = await nftListing();
        return l !== undefined && l.sets.some((x) => x.name === c.set)
          ? { state: 'present' }
          : { state: 'missing' };
      }
      case 'iptables-chain': {
        const t = await table(c.table);
        if (!t.chains.has(c.chain)) return { state: 'missing' };
        const held = t.rules.get(c.chain) ?? [];
        if (held.length !== c.rules.length)
          return { state: 'different', difference: `${held.length} rules, not ${c.rules.length}` };
        for (const r of c.rules) {
          if (!(await kernel.iptablesRuleExists(c.table, c.chain, r)))
            return { state: 'different', difference: `no rule -A ${c.chain} ${r.join(' ')}` };
        }
        return { state: 'present' };
      }
      case 'iptables-rule':
        return (await kernel.iptablesRuleExists(c.table, c.chain, c.args))
          ? { state: 'present' }
          : { state: 'missing' };
      case 'ipvs-virtual-server': {
        const held = (await (ipvs ??= kernel.ipvsVirtualServers())).get(c.key);
        if (held === undefined) return { state: 'missing' };
        if (held.service !== c.service)
          return { state: 'different', difference: `scheduler ${held.service}` };
        const want = c.realServers.join(', ');
        const have = held.realServers.join(', ');
        return want === have
          ? { state: 'present' }
          : { state: 'different', difference: `real servers ${have === '' ? 'none' : have}` };
      }
      case 'ipset-entry':
        return (await setEntries(c.set)).has(c.entry) ? { state: 'present' } : { state: 'missing' };
    }
  };
  const out: ProgrammedObject[] = [];
  for (const o of objects) out.push({ object: o.object, ...(await check(o.check)) });
  return out;
}
