// Conntrack sysctls kube-proxy sets at start (upstream pkg/proxy/conntrack/sysctls.go, cmd/kube-proxy/app
// server_linux.go; upstream-model.md §8): nf_conntrack_max is only ever raised, to max(maxPerCore × CPUs, min), and
// the hash table with it (to max/4); the TCP and UDP timeouts are written when configured (> 0); tcp_be_liberal is
// set to 1 when asked. Each file is written only if its value differs, so a node already tuned sees no writes.
// These are host-wide (the root network namespace's nf_conntrack_max is global): tests point `root` at a temp dir.
import type { Logger } from '../../util/logger.js';
import { ensureSysctl } from '../sysctl.js';

export interface ConntrackSysctlConfig {
  /** conntrack.maxPerCore (default 32768); 0 leaves nf_conntrack_max alone. */
  readonly maxPerCore: number;
  /** conntrack.min (default 131072). */
  readonly min: number;
  /** Seconds; 0 leaves the sysctl alone. Defaults 86400 and 3600. */
  readonly tcpEstablishedTimeoutSeconds: number;
  readonly tcpCloseWaitTimeoutSeconds: number;
  readonly tcpBeLiberal: boolean;
  /** Seconds; 0 (the default) leaves the sysctl alone. */
  readonly udpTimeoutSeconds: number;
  readonly udpStreamTimeoutSeconds: number;
}

export const DEFAULT_CONNTRACK_SYSCTLS: ConntrackSysctlConfig = Object.freeze({
  maxPerCore: 32768,
  min: 131072,
  tcpEstablishedTimeoutSeconds: 24 * 3600,
  tcpCloseWaitTimeoutSeconds: 3600,
  tcpBeLiberal: false,
  udpTimeoutSeconds: 0,
  udpStreamTimeoutSeconds: 0,
});

export const CONNTRACK_SYSCTL_PATHS = Object.freeze({
  max: 'proc/sys/net/netfilter/nf_conntrack_max',
  hashsize: 'sys/module/nf_conntrack/parameters/hashsize',
  tcpEstablished: 'proc/sys/net/netfilter/nf_conntrack_tcp_timeout_established',
  tcpCloseWait: 'proc/sys/net/netfilter/nf_conntrack_tcp_timeout_close_wait',
  tcpBeLiberal: 'proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal',
  udp: 'proc/sys/net/netfilter/nf_conntrack_udp_timeout',
  udpStream: 'proc/sys/net/netfilter/nf_conntrack_udp_timeout_stream',
} as const);

export interface SysctlWrite {
  /** Path relative to the root, e.g. "proc/sys/net/netfilter/nf_conntrack_max". */
  readonly path: string;
  readonly from: number | undefined;
  readonly to: number;
}

export interface ConntrackSysctlsResult {
  readonly writes: readonly SysctlWrite[];
  /** What could not be read or written, each naming the file; the rest was still applied. */
  readonly problems: readonly string[];
}

export interface ConntrackSysctlsOptions {
  /** Filesystem root holding proc/ and sys/; "/" in production. */
  readonly root?: string;
  /** Number of CPUs (upstream: runtime.NumCPU). */
  readonly cpus: number;
  readonly logger: Logger;
}

/** The nf_conntrack_max kube-proxy wants: max(maxPerCore × cpus, min); 0 when maxPerCore is 0 (leave it). */
export function desiredConntrackMax(cfg: ConntrackSysctlConfig, cpus: number): number {
  if (cfg.maxPerCore <= 0) return 0;
  return Math.max(cfg.maxPerCore * Math.max(1, cpus), cfg.min);
}

export async function applyConntrackSysctls(
  cfg: ConntrackSysctlConfig,
  o: ConntrackSysctlsOptions,
): Promise<ConntrackSysctlsResult> {
  const root = o.root ?? '/';
  const writes: SysctlWrite[] = [];
  const problems: string[] = [];

  /** Writes `to` when the current value differs (or, with raiseOnly, is lower). */
  const ensure = async (path: string, to: number, raiseOnly: boolean): Promise<void> => {
    const r = await ensureSysctl(path, to, { root, raiseOnly });
    if (r.kind === 'failed') problems.push(r.problem);
    else if (r.kind === 'written') {
      writes.push({ path, from: r.from, to });
      o.logger.info('Set sysctl', { path, from: r.from, to });
    }
  };

  const max = desiredConntrackMax(cfg, o.cpus);
  if (max > 0) {
    await ensure(CONNTRACK_SYSCTL_PATHS.max, max, true);
    // The hash table follows the limit (upstream: a quarter of it), again only upwards.
    await ensure(CONNTRACK_SYSCTL_PATHS.hashsize, Math.floor(max / 4), true);
  }
  if (cfg.tcpEstablishedTimeoutSeconds > 0) {
    await ensure(CONNTRACK_SYSCTL_PATHS.tcpEstablished, Math.floor(cfg.tcpEstablishedTimeoutSeconds), false);
  }
  if (cfg.tcpCloseWaitTimeoutSeconds > 0) {
    await ensure(CONNTRACK_SYSCTL_PATHS.tcpCloseWait, Math.floor(cfg.tcpCloseWaitTimeoutSeconds), false);
  }
  if (cfg.tcpBeLiberal) await ensure(CONNTRACK_SYSCTL_PATHS.tcpBeLiberal, 1, false);
  if (cfg.udpTimeoutSeconds > 0)
    await ensure(CONNTRACK_SYSCTL_PATHS.udp, Math.floor(cfg.udpTimeoutSeconds), false);
  if (cfg.udpStreamTimeoutSeconds > 0) {
    await ensure(CONNTRACK_SYSCTL_PATHS.udpStream, Math.floor(cfg.udpStreamTimeoutSeconds), false);
  }
  for (const p of problems) o.logger.error('Conntrack sysctl not applied', { problem: p });
  return { writes, problems };
}
