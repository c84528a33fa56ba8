// What ipvs mode sets up once per node before its first sync (upstream NewProxier and CanUseIPVSProxier): the
// IPVS handle, proof that the kernel has the configured scheduler, the sysctls IPVS needs, and the connection
// timeouts when configured.
import { ensureSysctl } from '../../netfilter/sysctl.js';
import { openIpvs } from '../../netfilter/ipvs/client.js';
import { virtualServerKey } from '../../netfilter/ipvs/types.js';
import type { IpvsHandle, VirtualServer } from '../../netfilter/ipvs/types.js';
import type { Logger } from '../../util/logger.js';
import { DEFAULT_IPVS_SCHEDULER } from './requirements.js';
import { ipvsSysctlValues } from './sysctls.js';

export interface IpvsNodeSettings {
  readonly scheduler: string;
  readonly strictARP: boolean;
  readonly tcpTimeoutSeconds: number;
  readonly tcpFinTimeoutSeconds: number;
  readonly udpTimeoutSeconds: number;
}

/**
 * The probe upstream adds to see the scheduler work: an address from TEST-NET-2 (RFC 5737), which no node should
 * use for a Service, on a port of no meaning; removed at once.
 */
export const PROBE_VIRTUAL_SERVER: Omit<VirtualServer, 'scheduler'> = {
  address: '198.51.100.0',
  port: 20000,
  protocol: 'TCP',
  flags: 0,
  timeout: 0,
};

/** Undefined when IPVS has the scheduler: a virtual server already uses it, or the probe could be added. */
export function probeScheduler(ipvs: IpvsHandle, scheduler: string): string | undefined {
  const listed = ipvs.listVirtualServers();
  if (!listed.ok) return listed.message;
  if (listed.value.some((vs) => vs.scheduler === scheduler)) return undefined;
  const probe: VirtualServer = { ...PROBE_VIRTUAL_SERVER, scheduler };
  const added = ipvs.addVirtualServer(probe);
  if (!added.ok) return added.message;
  const removed = ipvs.deleteVirtualServer(probe);
  return removed.ok ? undefined : `${virtualServerKey(probe)}: ${removed.message}`;
}

/** Each of ipvsSysctlValues written only when it differs; the problems, as upstream's failures are fatal. */
export async function ipvsSysctls(strictARP: boolean): Promise<string[]> {
  const problems: string[] = [];
  for (const [path, value] of ipvsSysctlValues(strictARP)) {
    const r = await ensureSysctl(path, value);
    if (r.kind === 'failed') problems.push(r.problem);
  }
  return problems;
}

/** Opens IPVS and readies the node, or throws with what is wrong (the agent exits with it). */
export async function setUpIpvsNode(settings: IpvsNodeSettings, logger: Logger): Promise<IpvsHandle> {
  const opened = openIpvs();
  if ('error' in opened) throw new Error(`ipvs mode: ${opened.error}`);
  const scheduler = settings.scheduler || DEFAULT_IPVS_SCHEDULER;
  if (settings.scheduler === '') logger.info('IPVS scheduler not specified, use rr by default');
  const problem = probeScheduler(opened, scheduler);
  if (problem !== undefined) {
    opened.close();
    throw new Error(`ipvs mode: the kernel cannot use the IPVS scheduler "${scheduler}": ${problem}`);
  }
  const sysctlProblems = await ipvsSysctls(settings.strictARP);
  if (sysctlProblems.length > 0) {
    opened.close();
    throw new Error(`ipvs mode: ${sysctlProblems.join('; ')}`);
  }
  const { tcpTimeoutSeconds: tcp, tcpFinTimeoutSeconds: tcpFin, udpTimeoutSeconds: udp } = settings;
  if (tcp > 0 || tcpFin > 0 || udp > 0) {
    const set = opened.setTimeouts({ tcp, tcpFin, udp });
    if (!set.ok) logger.error('Failed to configure IPVS timeouts', { error: set.message });
  }
  return opened;
}
