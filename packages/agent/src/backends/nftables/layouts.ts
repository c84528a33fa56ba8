// The layouts by the name an operator gives (--nftables-layout), for the places that wire parts together.
import type { NftablesLayoutName } from '../../config/nftables-layout.js';
import { FLAT_LAYOUT } from './flat/layout.js';
import type { NftablesLayout } from './layout.js';
import { UPSTREAM_LAYOUT } from './upstream-layout.js';

export const NFTABLES_LAYOUT_BY_NAME: Readonly<Record<NftablesLayoutName, NftablesLayout>> = {
  upstream: UPSTREAM_LAYOUT,
  flat: FLAT_LAYOUT,
};
