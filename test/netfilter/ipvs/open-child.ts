// Run by host.test.ts inside a network namespace it made: opens IPVS there (the socket lives in the namespace the
// process is in) and prints one JSON line saying what happened, including whether anything was thrown, and
// whether the kernel has IPVS in this namespace afterwards (/proc/net/ip_vs: there once ip_vs is loaded).
import { existsSync } from 'node:fs';
import { openIpvs } from '../../../packages/agent/src/netfilter/ipvs/client.js';

function open(): Record<string, unknown> {
  try {
    const h = openIpvs();
    if ('error' in h) return { opened: false, error: h.error, reason: h.reason };
    const virtualServers = h.listVirtualServers();
    const timeouts = h.getTimeouts();
    h.close();
    return { opened: true, virtualServers, timeouts, afterClose: h.flush() };
  } catch (e) {
    return { threw: e instanceof Error ? (e.stack ?? e.message) : String(e) };
  }
}

console.log(JSON.stringify({ ...open(), procNetIpVs: existsSync('/proc/net/ip_vs') }));
