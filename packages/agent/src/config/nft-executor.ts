// How nftables mode reaches nft (--nft-executor; kube-proxy-ts's own, not part of upstream's
// KubeProxyConfiguration). auto: libnftables in the agent's own process when it loads, else the `nft` binary.
// cli: always the binary, a process per run. library: libnftables or refuse to start. The choice itself is made
// once, in src/netfilter/nft/choose-executor.ts.
export const NFT_EXECUTORS = ['auto', 'cli', 'library'] as const;
export type NftExecutorChoice = (typeof NFT_EXECUTORS)[number];
export const DEFAULT_NFT_EXECUTOR: NftExecutorChoice = 'auto';
