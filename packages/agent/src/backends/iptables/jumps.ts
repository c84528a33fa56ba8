// The jump rules from the built-in chains into ours (upstream iptablesJumpChains). They are ensured one by one
// (`-C`, then `-I` to prepend) rather than restored, because a restore would have to own all of PREROUTING etc.
import type { IptablesTableName } from '../../netfilter/iptables/types.js';
import type { NodeNetworkConfig } from '../../sync/backend.js';
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  KUBELET_FIREWALL,
} from './naming.js';
import type { IptablesExtras } from './render.js';
import { localhostNodePortsActive } from './render.js';

export interface JumpRule {
  readonly table: IptablesTableName;
  /** The built-in chain that holds the jump. */
  readonly from: string;
  /** Our chain it jumps to. */
  readonly to: string;
  readonly comment?: string;
  readonly extra: readonly string[];
}

const NEW_ONLY = ['-m', 'conntrack', '--ctstate', 'NEW'];

export const JUMP_RULES: readonly JumpRule[] = [
  {
    table: 'filter',
    from: 'INPUT',
    to: KUBE_EXTERNAL_SERVICES,
    comment: 'kubernetes externally-visible service portals',
    extra: NEW_ONLY,
  },
  {
    table: 'filter',
    from: 'FORWARD',
    to: KUBE_EXTERNAL_SERVICES,
    comment: 'kubernetes externally-visible service portals',
    extra: NEW_ONLY,
  },
  {
    table: 'filter',
    from: 'INPUT',
    to: KUBE_NODEPORTS,
    comment: 'kubernetes health check service ports',
    extra: [],
  },
  {
    table: 'filter',
    from: 'FORWARD',
    to: KUBE_SERVICES,
    comment: 'kubernetes service portals',
    extra: NEW_ONLY,
  },
  {
    table: 'filter',
    from: 'OUTPUT',
    to: KUBE_SERVICES,
    comment: 'kubernetes service portals',
    extra: NEW_ONLY,
  },
  { table: 'filter', from: 'FORWARD', to: KUBE_FORWARD, comment: 'kubernetes forwarding rules', extra: [] },
  {
    table: 'filter',
    from: 'INPUT',
    to: KUBE_PROXY_FIREWALL,
    comment: 'kubernetes load balancer firewall',
    extra: NEW_ONLY,
  },
  {
    table: 'filter',
    from: 'OUTPUT',
    to: KUBE_PROXY_FIREWALL,
    comment: 'kubernetes load balancer firewall',
    extra: NEW_ONLY,
  },
  {
    table: 'filter',
    from: 'FORWARD',
    to: KUBE_PROXY_FIREWALL,
    comment: 'kubernetes load balancer firewall',
    extra: NEW_ONLY,
  },
  { table: 'nat', from: 'OUTPUT', to: KUBE_SERVICES, comment: 'kubernetes service portals', extra: [] },
  { table: 'nat', from: 'PREROUTING', to: KUBE_SERVICES, comment: 'kubernetes service portals', extra: [] },
  {
    table: 'nat',
    from: 'POSTROUTING',
    to: KUBE_POSTROUTING,
    comment: 'kubernetes postrouting rules',
    extra: [],
  },
];

/** Only with IPv4 localhost NodePorts: kubelet's old anti-martian chain, without a comment. */
export const KUBELET_JUMP_RULES: readonly JumpRule[] = [
  { table: 'filter', from: 'INPUT', to: KUBELET_FIREWALL, extra: [] },
  { table: 'filter', from: 'OUTPUT', to: KUBELET_FIREWALL, extra: [] },
];

/** The argv of a jump rule: `<extra> -m comment --comment <text> -j <chain>`. */
export function jumpArgs(j: JumpRule): string[] {
  return [
    ...j.extra,
    ...(j.comment === undefined ? [] : ['-m', 'comment', '--comment', j.comment]),
    '-j',
    j.to,
  ];
}

/**
 * The jump rules a node ensures: kubelet's KUBE-FIREWALL ones only with IPv4 localhost NodePorts. Pure, so the
 * backend and `kube-proxy-ts render` (which prints them after the restore input) ask the same question.
 */
export function jumpRulesFor(node: NodeNetworkConfig, extras: IptablesExtras): readonly JumpRule[] {
  return localhostNodePortsActive(node, extras) ? [...JUMP_RULES, ...KUBELET_JUMP_RULES] : JUMP_RULES;
}
