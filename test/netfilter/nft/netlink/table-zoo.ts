// Tables for the netlink table listing (src/netfilter/nft/netlink/table.ts) beyond the kube-proxy layouts' own:
// every datatype, object type, set flag, chain type, hook and priority form the reader knows, anonymous sets and
// a binding chain (which nft does not list), comments everywhere, and a table it must refuse (a datatype it does
// not know). Loaded with `nft -f` by the kernel test and by the recorder of table-replies.json.
import type { NftListing } from '../../../../packages/agent/src/netfilter/nft/executor.js';

export const ZOO_TABLES = `
table ip zoo {
  comment "the zoo"
  counter hits { }
  set constant-set { type ipv4_addr; flags constant; elements = { 198.18.0.1 } }
  set ranges { type ipv4_addr; flags interval; }
  set expiring { type ipv4_addr; flags timeout; timeout 1m30s; }
  set learned { type ipv4_addr; flags dynamic; size 100; }
  set short-lived { type ipv4_addr; flags dynamic,timeout; timeout 500ms; }
  set macs { type ether_addr; }
  set marks { type mark; }
  set names { type ifname; }
  set indexes { type iface_index; }
  set typeof-set { typeof meta mark . ip saddr; comment "a typeof set"; }
  set addr-port-ranges { type ipv4_addr . inet_service; flags interval; }
  set v6 { type ipv6_addr; policy memory; }
  map to-mark { type ipv4_addr : mark; }
  map verdict-ranges { type ipv4_addr : verdict; flags interval; }
  map to-counter { type ipv4_addr : counter; }
  map to-quota { type ipv4_addr : quota; }
  map to-limit { type ipv4_addr : limit; }
  map typeof-map { typeof ip saddr : meta mark; }
  map to-endpoint { type ipv4_addr : ipv4_addr . inet_service; timeout 1h; comment "with a timeout"; }
  map endpoints { typeof ip daddr . meta l4proto . th dport . numgen random mod 2 : ip daddr . tcp dport; }
  chain input-drop { type filter hook input priority filter + 5; policy drop; comment "a base chain"; }
  chain source-nat { type nat hook postrouting priority srcnat; }
  chain lowest { type route hook output priority -2147483648; }
  chain highest { type filter hook prerouting priority 2147483647; }
  chain regular {
    comment "regular"
    ip saddr { 198.18.0.1, 198.18.0.2 } accept comment "an anonymous set"
    jump { accept; }
    counter
  }
  chain with-vmap { ip daddr vmap { 198.18.0.3 : jump regular } comment "an anonymous map"; }
}
table inet zoo {
  comment "inet"
  chain ing { type filter hook ingress device "lo" priority 0; }
  chain forwarding { type filter hook forward priority -5; }
  set pairs { type ipv6_addr . inet_service; flags interval; }
  map bymac { type ether_addr : iface_index; }
}
`;

/** A table the netlink reader refuses: ct_state is a datatype it does not know. */
export const ODD_TABLE = `
table ip odd {
  set states { type ct_state; }
  chain c { }
}
`;

/**
 * What parseTableJson of nft 1.0.6's `--json --terse list table` gives for a table whose netlink listing is
 * `listing`: nft 1.0.6's JSON leaves out the table's and the chains' comments and a set's `dynamic` flag (its
 * text listing prints all three; table.ts gives them). Only these, and nothing else, are taken out.
 */
export function asNft106JsonGives(listing: NftListing): NftListing {
  const { comment: _table, ...table } = listing.table;
  return {
    ...listing,
    table,
    chains: listing.chains.map(({ comment: _chain, ...chain }) => chain),
    sets: listing.sets.map((s) => {
      if (!s.flags?.includes('dynamic')) return s;
      const { flags, ...rest } = s;
      const kept = flags.filter((f) => f !== 'dynamic');
      return kept.length > 0 ? { ...rest, flags: kept } : rest;
    }),
  };
}
