// Which pure renderer prints a mode's full-sync input (`kube-proxy-ts render`). Typed per mode, so a new mode
// without a renderer does not compile.
import { renderIptablesRestore } from '../backends/iptables/render.js';
import type { IptablesExtras } from '../backends/iptables/render.js';
import { renderFullSyncTransaction } from '../backends/nftables/backend.js';
import { serializeRestore } from '../netfilter/iptables/serialize.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../sync/backend.js';

export type IptablesRenderOptions = IptablesExtras;

export const RENDERERS: Record<
  ProxyMode,
  (snapshot: ProxySnapshot, node: NodeNetworkConfig, iptables: IptablesRenderOptions) => string
> = {
  nftables: (snapshot, node) => renderFullSyncTransaction(snapshot, node),
  iptables: (snapshot, node, extras) => serializeRestore(renderIptablesRestore(snapshot, node, extras)),
};
