// The proxy modes kube-proxy-ts implements (KubeProxyConfiguration.mode).
export const PROXY_MODES = ['iptables', 'nftables'] as const;
export type ProxyMode = (typeof PROXY_MODES)[number];
