// One entry per proxy mode: how to make that mode's backend for a node, and how to show what it programmed when a
// scenario fails. The table is typed Record<ProxyMode, …>, so a new mode does not compile until it has an entry;
// a mode whose backend is not written yet has `create: null` and its scenarios skip, saying so.
import type { CommandRunner } from '../../../src/netfilter/command.js';
import type { ProxyMode } from '../../../src/config/proxy-mode.js';
import type { NodeNetworkConfig, ProxyBackend } from '../../../src/sync/backend.js';
import type { Clock } from '../../../src/util/clock.js';
import { NftablesBackend } from '../../../src/backends/nftables/backend.js';
import { IptablesBackend } from '../../../src/backends/iptables/backend.js';
import { DEFAULT_IPTABLES_EXTRAS } from '../../../src/backends/iptables/render.js';
import { join } from 'node:path';

export interface BackendFactoryInput {
  readonly node: NodeNetworkConfig;
  /** Runs inside the node's namespace. */
  readonly commands: CommandRunner;
  readonly clock: Clock;
  /** The cluster's temporary directory (for a mode's own files, such as an xtables lock). */
  readonly stateDir: string;
}

export interface ModeSupport {
  readonly create: ((input: BackendFactoryInput) => ProxyBackend) | null;
  /** Commands (run inside a node) whose output shows the mode's rules, attached to a failing scenario. */
  readonly dump: readonly (readonly [string, ...string[]])[];
  /** --nodeport-addresses as the mode defaults it upstream (nftables: the node's primary IPs; iptables: all). */
  readonly nodePortAddresses: readonly string[];
}

export const MODE_SUPPORT: Record<ProxyMode, ModeSupport> = {
  iptables: {
    create: ({ node, commands, clock, stateDir }) =>
      new IptablesBackend({
        node,
        commands,
        clock,
        iptables: { ...DEFAULT_IPTABLES_EXTRAS, variant: 'auto', lockFile: join(stateDir, 'xtables.lock') },
      }),
    dump: [['iptables-save'], ['ip6tables-save']],
    nodePortAddresses: [],
  },
  nftables: {
    create: ({ node, commands, clock }) => new NftablesBackend({ node, commands, clock }),
    dump: [['nft', 'list', 'ruleset']],
    nodePortAddresses: ['primary'],
  },
};
