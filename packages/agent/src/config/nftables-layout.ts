// How nftables mode lays out its table (--nftables-layout; not part of upstream's KubeProxyConfiguration).
// upstream: upstream kube-proxy's ruleset, name for name (the default: the drop-in promise). flat: a few shared
// maps and dispatch chains instead of chains per service port, so that load time and one-endpoint changes do not
// grow with the number of Services (src/backends/nftables/flat/README.md).
export const NFTABLES_LAYOUTS = ['upstream', 'flat'] as const;
export type NftablesLayoutName = (typeof NFTABLES_LAYOUTS)[number];
export const DEFAULT_NFTABLES_LAYOUT: NftablesLayoutName = 'upstream';

/** What each layout does, for /configz and the docs. */
export const NFTABLES_LAYOUT_DESCRIPTIONS: Readonly<Record<NftablesLayoutName, string>> = {
  upstream: "upstream kube-proxy's nftables ruleset: a chain per service port with its own dnat map",
  flat:
    'shared maps keyed by frontend (service-ips, *-dispatch, endpoints-<proto>) and shared dispatch chains by ' +
    'endpoint count; no chain per service port; one-endpoint changes are a few element operations',
};
