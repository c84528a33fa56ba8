// Virtual and real servers as ipvsadm's command lines (`ipvsadm --restore` reads them, `ipvsadm -Sn` prints the
// adds): how render prints what a node programs and diff prints what a sync changes, though the agent itself
// speaks generic netlink. -t, -u or --sctp-service with the address (IPv6 in brackets); -s the scheduler, -p the
// persistence timeout, -b sh-port for source hashing with ports; real servers masqueraded (-m) with their weight.
import { IPVS_FLAG_PERSISTENT, IPVS_FLAG_SOURCE_HASH, realServerKey } from './types.js';
import type { IpvsTimeouts, RealServer, VirtualServer } from './types.js';

function serviceArgs(vs: VirtualServer): string {
  const flag = vs.protocol === 'TCP' ? '-t' : vs.protocol === 'UDP' ? '-u' : '--sctp-service';
  return `${flag} ${realServerKey(vs)}`;
}

/** -A (add) or -E (edit) a virtual server. */
export function ipvsadmService(verb: '-A' | '-E', vs: VirtualServer): string {
  let line = `${verb} ${serviceArgs(vs)} -s ${vs.scheduler}`;
  if ((vs.flags & IPVS_FLAG_PERSISTENT) !== 0) line += ` -p ${vs.timeout}`;
  if ((vs.flags & IPVS_FLAG_SOURCE_HASH) !== 0) line += ` -b ${vs.scheduler}-port`;
  return line;
}

export function ipvsadmDeleteService(vs: VirtualServer): string {
  return `-D ${serviceArgs(vs)}`;
}

/** -a (add) or -e (edit) a real server of `vs`. */
export function ipvsadmReal(verb: '-a' | '-e', vs: VirtualServer, rs: RealServer): string {
  return `${verb} ${serviceArgs(vs)} -r ${realServerKey(rs)} -m -w ${rs.weight}`;
}

export function ipvsadmDeleteReal(vs: VirtualServer, rs: RealServer): string {
  return `-d ${serviceArgs(vs)} -r ${realServerKey(rs)}`;
}

export function ipvsadmTimeouts(t: IpvsTimeouts): string {
  return `--set ${t.tcp} ${t.tcpFin} ${t.udp}`;
}
