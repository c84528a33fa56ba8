// The proxy modes kube-proxy-ts implements (KubeProxyConfiguration.mode). ipvs is upstream's deprecated IPVS
// proxier (KEP-5495): accepted behind the KubeProxyIPVS feature gate, with upstream's deprecation warning.
export const PROXY_MODES = ['iptables', 'nftables', 'ipvs'] as const;
export type ProxyMode = (typeof PROXY_MODES)[number];
