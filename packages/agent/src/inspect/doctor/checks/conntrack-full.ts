// conntrack-full: how full the conntrack table is. When nf_conntrack_count reaches nf_conntrack_max the kernel
// drops new connections ("nf_conntrack: table full, dropping packet"), which looks like a Service failing.
import type { DoctorCheck } from '../types.js';
import { finding, skipped } from '../types.js';
import { readSysctl } from './sysctl-read.js';

export const conntrackFull: DoctorCheck = {
  id: 'conntrack-full',
  title: 'conntrack table fill against nf_conntrack_max',
  async run(ctx) {
    const count = await readSysctl(ctx.runner, 'net.netfilter.nf_conntrack_count');
    const maxEntries = await readSysctl(ctx.runner, 'net.netfilter.nf_conntrack_max');
    if (count === undefined || maxEntries === undefined)
      return skipped('net.netfilter.nf_conntrack_count/max unreadable (nf_conntrack not loaded?)');
    const fill = Number(count) / Math.max(1, Number(maxEntries));
    const evidence = [
      `nf_conntrack_count ${count} of nf_conntrack_max ${maxEntries} (${(fill * 100).toFixed(1)} %)`,
    ];
    const remedy =
      'Raise the limit with kube-proxy’s own setting (conntrack.maxPerCore / conntrack.min in the ConfigMap; it is ' +
      `written at start) or by hand: sysctl -w net.netfilter.nf_conntrack_max=${Math.max(2 * Number(maxEntries), 131072)}; ` +
      "and find who opens so many: conntrack -L | awk '{print $1, $5}' | sort | uniq -c | sort -rn | head";
    if (fill >= 0.9)
      return finding(
        'fail',
        `the conntrack table is ${(fill * 100).toFixed(0)} % full: new connections are about to be dropped`,
        evidence,
        remedy,
      );
    if (fill >= 0.75)
      return finding('warn', `the conntrack table is ${(fill * 100).toFixed(0)} % full`, evidence, remedy);
    return finding('ok', `conntrack table ${(fill * 100).toFixed(1)} % full`, evidence);
  },
};
