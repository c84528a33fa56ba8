// One entry per proxy mode (and per nftables layout): how to make that backend for a node, and how to show what it
// programmed when a scenario fails. The table is typed Record<DataplaneBackend, …>, so a new mode does not compile
// until it has an entry; a mode whose backend is not written yet has `create: null` and its scenarios skip, saying
// so. KPTS_DATAPLANE_BACKENDS=nftables-flat,… runs only those entries (the others skip, saying so).
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import type { ProxyMode } from '../../../packages/agent/src/config/proxy-mode.js';
import type {
  BackendSyncResult,
  NodeNetworkConfig,
  ProxyBackend,
} from '../../../packages/agent/src/sync/backend.js';
import type { Clock } from '../../../packages/agent/src/util/clock.js';
import { NftablesBackend } from '../../../packages/agent/src/backends/nftables/backend.js';
import { FLAT_LAYOUT } from '../../../packages/agent/src/backends/nftables/flat/layout.js';
import { PROXY_MODES } from '../../../packages/agent/src/config/proxy-mode.js';
import { IptablesBackend } from '../../../packages/agent/src/backends/iptables/backend.js';
import { DEFAULT_IPTABLES_EXTRAS } from '../../../packages/agent/src/backends/iptables/render.js';
import { join } from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { IpvsBackend } from '../../../packages/agent/src/backends/ipvs/backend.js';
import { ipvsSysctlValues } from '../../../packages/agent/src/backends/ipvs/sysctls.js';
import { openIpvs } from '../../../packages/agent/src/netfilter/ipvs/client.js';
import { inNetworkNamespace } from '../../../packages/agent/src/netfilter/in-namespace.js';

export interface BackendFactoryInput {
  readonly node: NodeNetworkConfig;
  /** Runs inside the node's namespace. */
  readonly commands: CommandRunner;
  readonly clock: Clock;
  /** The cluster's temporary directory (for a mode's own files, such as an xtables lock). */
  readonly stateDir: string;
  /** The node's network namespace (ipvs mode opens its IPVS socket inside it). */
  readonly namespace: string;
}

/** What the scenarios run against: each proxy mode, and nftables mode's flat layout (--nftables-layout flat). */
export const DATAPLANE_BACKENDS = [...PROXY_MODES, 'nftables-flat'] as const;
export type DataplaneBackend = ProxyMode | 'nftables-flat';

/** The backends this run asks for (KPTS_DATAPLANE_BACKENDS, comma-separated), or every one. */
export function requestedBackends(env: NodeJS.ProcessEnv = process.env): ReadonlySet<DataplaneBackend> {
  const asked = (env.KPTS_DATAPLANE_BACKENDS ?? '').split(',').filter((b) => b !== '');
  const unknown = asked.filter((b) => !(DATAPLANE_BACKENDS as readonly string[]).includes(b));
  if (unknown.length > 0)
    throw new Error(
      `KPTS_DATAPLANE_BACKENDS: unknown ${unknown.join(', ')} (known: ${DATAPLANE_BACKENDS.join(', ')})`,
    );
  return new Set(asked.length > 0 ? (asked as DataplaneBackend[]) : DATAPLANE_BACKENDS);
}

export interface ModeSupport {
  readonly create: ((input: BackendFactoryInput) => ProxyBackend) | null;
  /** Commands (run inside a node) whose output shows the mode's rules, attached to a failing scenario. */
  readonly dump: readonly (readonly [string, ...string[]])[];
  /** --nodeport-addresses as the mode defaults it upstream (nftables: the node's primary IPs; iptables: all). */
  readonly nodePortAddresses: readonly string[];
  /** Host tools the backend needs (a kernel test without them skips, or fails with KPTS_REQUIRE_KERNEL=1). */
  readonly tools?: readonly string[];
  /**
   * Why this kernel cannot run the mode at all (ipvs on a kernel without IP_VS), or undefined. Such a mode skips,
   * saying so, also under KPTS_REQUIRE_KERNEL=1: no setup can fix a kernel; test/vm runs it on Debian's.
   */
  readonly kernelLacks?: () => string | undefined;
}

/** ipvs mode's kernel: IPVS in the kernel (loaded, built in, or loadable by modprobe). */
function kernelLacksIPVS(): string | undefined {
  if (existsSync('/sys/module/ip_vs')) return undefined;
  if (spawnSync('modprobe', ['-n', '--', 'ip_vs']).status === 0) return undefined;
  return "this kernel has no IP_VS (ipvs mode runs in a guest on Debian's kernel: test/vm/ipvs-dataplane.test.ts)";
}

export const MODE_SUPPORT: Record<DataplaneBackend, ModeSupport> = {
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
    tools: ['ip', 'iptables-restore', 'iptables-save'],
  },
  nftables: {
    create: ({ node, commands, clock }) => new NftablesBackend({ node, commands, clock }),
    dump: [['nft', 'list', 'ruleset']],
    nodePortAddresses: ['primary'],
    tools: ['ip', 'nft'],
  },
  ipvs: {
    create: ({ node, commands, clock, namespace }) => {
      const ipvs = inNetworkNamespace(`/run/netns/${namespace}`, openIpvs);
      if ('error' in ipvs) throw new Error(`${namespace}: ${ipvs.error}`);
      // The agent sets these in its node's namespace at start (node-setup.ts); here each node namespace gets them.
      const sysctls = ipvsSysctlValues(false).map(
        ([path, v]) => `${path.slice('proc/sys/'.length).replace(/\//g, '.')}=${v}`,
      );
      execFileSync('ip', ['netns', 'exec', namespace, 'sysctl', '-q', '-w', ...sysctls]);
      return new IpvsBackend({
        node,
        commands,
        clock,
        ipvs,
        ipvsOptions: { scheduler: 'rr', excludeCIDRs: [], randomFully: false },
      });
    },
    dump: [
      ['ipvsadm', '-Ln'],
      ['ip', 'addr', 'show', 'dev', 'kube-ipvs0'],
      ['ipset', 'save'],
      ['iptables-save'],
      ['ip6tables-save'],
    ],
    nodePortAddresses: [],
    tools: ['ip', 'ipset', 'ipvsadm', 'iptables-restore', 'iptables-save'],
    kernelLacks: kernelLacksIPVS,
  },
  'nftables-flat': {
    create: ({ node, commands, clock }) =>
      new NftablesBackend({ node, commands, clock, layout: FLAT_LAYOUT }),
    dump: [['nft', 'list', 'ruleset']],
    nodePortAddresses: ['primary'],
    tools: ['ip', 'nft'],
  },
};

/** What a backend reports for a sync that wrote nothing: for stand-in backends in the harness's own tests. */
export const NOTHING_DONE: BackendSyncResult = {
  full: true,
  noLocalEndpointsInternal: 0,
  noLocalEndpointsExternal: 0,
  timings: { ownMs: 0, kernelMs: 0 },
  operations: 0,
};
