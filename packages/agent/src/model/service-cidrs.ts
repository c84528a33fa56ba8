// The service ranges of one family, from the cluster's ServiceCIDR objects (upstream: the proxier's
// OnServiceCIDRsChanged, fed by a ServiceCIDR informer): every CIDR of every object, canonical, sorted, without
// duplicates. Entries that do not parse are left out (the API server validates them; a hand-made object may not).
import type { ServiceCIDR } from '../api/objects.js';
import { parseCIDRSloppy } from './ip.js';
import type { IPFamily } from './ip.js';

export function serviceCIDRsOf(objects: Iterable<ServiceCIDR>, family: IPFamily): string[] {
  const out = new Set<string>();
  for (const o of objects) {
    const cidrs = o.spec?.cidrs;
    if (!Array.isArray(cidrs)) continue;
    for (const c of cidrs as readonly unknown[]) {
      const parsed = typeof c === 'string' ? parseCIDRSloppy(c.trim()) : undefined;
      if (parsed !== undefined && parsed.family === family) out.add(parsed.text);
    }
  }
  return [...out].sort();
}
