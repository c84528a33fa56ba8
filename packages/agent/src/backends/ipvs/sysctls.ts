// The sysctls ipvs mode needs on its node (upstream NewProxier): set by the agent at start (node-setup.ts), read
// back by doctor's sysctls check, set by the dataplane harness in its node namespaces. One list for all three.
import { release } from 'node:os';

/** Kernels from 5.9 fixed conn_reuse_mode's slow reconnects (k/k #93297); older ones need it off. */
export function connReuseModeNeedsZero(kernelRelease: string): boolean {
  const [major = 0, minor = 0] = kernelRelease.split(/[.-]/).map(Number);
  return major < 5 || (major === 5 && minor < 9);
}

/**
 * The sysctls IPVS mode needs (upstream NewProxier), as /proc/sys paths and values; per network namespace. Without
 * vs/conntrack IPVS's packets escape conntrack, and with them the masquerade of NodePort and hairpin traffic.
 */
export function ipvsSysctlValues(strictARP: boolean, kernelRelease = release()): [string, number][] {
  const wanted: [string, number][] = [
    ['proc/sys/net/ipv4/vs/conntrack', 1],
    ['proc/sys/net/ipv4/vs/expire_nodest_conn', 1],
    ['proc/sys/net/ipv4/vs/expire_quiescent_template', 1],
    ['proc/sys/net/ipv4/ip_forward', 1],
  ];
  if (connReuseModeNeedsZero(kernelRelease)) wanted.push(['proc/sys/net/ipv4/vs/conn_reuse_mode', 0]);
  if (strictARP)
    wanted.push(['proc/sys/net/ipv4/conf/all/arp_ignore', 1], ['proc/sys/net/ipv4/conf/all/arp_announce', 2]);
  return wanted;
}
