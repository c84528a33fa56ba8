// The lab's kube-proxy ConfigMap, shaped as kubeadm makes it (kube-system/kube-proxy, key config.conf holding a
// KubeProxyConfiguration), and the few facts the lab reads back from it. The lab writes config.conf verbatim to
// each node's file, as the DaemonSet's ConfigMap volume would; the proxies read, default and validate it.
import { parse, stringify } from 'yaml';
import { isObject } from '../apiserver/json.js';
import type { ProxyMode } from 'kube-proxy-ts/config/proxy-mode.js';
import { CLUSTER_CIDR } from './layout.js';

/** What the configuration depends on besides the mode: the lab's families. */
export interface LabProxyNetwork {
  /** kube-proxy's clusterCIDR: one range of pod CIDRs per family, primary first. */
  readonly clusterCIDRs: readonly string[];
}

const IPV4_ONLY: LabProxyNetwork = { clusterCIDRs: [CLUSTER_CIDR] };

export const CONFIGMAP_NAMESPACE = 'kube-system';
export const CONFIGMAP_NAME = 'kube-proxy';
export const CONFIGMAP_KEY = 'config.conf';

/**
 * The lab's starting configuration: upstream's defaults, except what a shared host needs. Node IPs (and so the
 * families the proxies program, primary first) come from each Node's InternalIPs, as upstream's do; bindAddress
 * stays unset (0.0.0.0), which lets the first node IP pick the primary family.
 */
export function labProxyConfiguration(mode: ProxyMode, network: LabProxyNetwork = IPV4_ONLY): string {
  const ipv6 = network.clusterCIDRs.some((c) => c.includes(':'));
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode,
    clusterCIDR: network.clusterCIDRs.join(','),
    // Inside each node's namespace: the lab reads both from there (`lab exec NODE -- curl …`).
    metricsBindAddress: '127.0.0.1:10249',
    // With IPv6 nodes, [::]: a Node.js listener on 0.0.0.0 takes IPv4 only (Go's, upstream's, takes both), and
    // health checks must answer on every node IP.
    healthzBindAddress: ipv6 ? '[::]:10256' : '0.0.0.0:10256',
    // Conntrack limits and timeouts are host-wide sysctls (nf_conntrack_max is not per namespace): 0 leaves
    // them alone, as kind does for the same reason.
    conntrack: {
      maxPerCore: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    },
    iptables: { minSyncPeriod: '1s', syncPeriod: '30s', masqueradeAll: false },
    nftables: { minSyncPeriod: '1s', syncPeriod: '30s', masqueradeAll: false },
    // Seed 003's IPVS settings; its minSyncPeriod as the other modes' (upstream's default is 0s).
    ipvs: { minSyncPeriod: '1s', syncPeriod: '30s', scheduler: 'rr' },
  });
}

export function kubeProxyConfigMap(mode: ProxyMode, network: LabProxyNetwork = IPV4_ONLY): object {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: CONFIGMAP_NAME,
      namespace: CONFIGMAP_NAMESPACE,
      labels: { app: 'kube-proxy' },
    },
    data: { [CONFIGMAP_KEY]: labProxyConfiguration(mode, network) },
  };
}

/** config.conf of a ConfigMap object, or undefined when the object has none (the lab then keeps the old one). */
export function configFromConfigMap(obj: unknown): string | undefined {
  if (!isObject(obj) || !isObject(obj.data)) return undefined;
  const text = obj.data[CONFIGMAP_KEY];
  return typeof text === 'string' && text.trim() !== '' ? text : undefined;
}

/** The mode a config.conf asks for (upstream: "" means iptables on Linux); undefined when unreadable. */
export function modeOfConfig(text: string): string | undefined {
  try {
    const doc: unknown = parse(text);
    if (!isObject(doc)) return undefined;
    const mode = doc.mode;
    if (mode === undefined || mode === '') return 'iptables';
    return typeof mode === 'string' ? mode : undefined;
  } catch {
    return undefined;
  }
}
