// Run by ipvs-netlink.test.ts inside a guest on Debian's kernel: the IPVS scenario (test/netfilter/ipvs/
// scenario.ts) through openIpvs(), with ipvsadm reading the kernel's state at each stage, then one JSON line: the
// steps, ipvsadm's readings, and whether ip_vs was loaded before and after the handle was opened.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { openIpvs } from '../../packages/agent/src/netfilter/ipvs/client.js';
import { runScenario } from '../netfilter/ipvs/scenario.js';

/** ipvsadm's own reading of the kernel: the rules as `ipvsadm -S` saves them, or the timeouts. */
function ipvsadm(stage: string): string {
  const args = stage === 'timeouts' ? ['-L', '--timeout'] : ['-S', '-n'];
  return execFileSync('ipvsadm', args, { encoding: 'utf8' });
}

const loadedBefore = existsSync('/sys/module/ip_vs');
const handle = openIpvs();
const loadedAfter = existsSync('/sys/module/ip_vs');
if ('error' in handle) {
  console.log(JSON.stringify({ loadedBefore, loadedAfter, openError: handle }));
} else {
  console.log(JSON.stringify({ loadedBefore, loadedAfter, ...runScenario(handle, ipvsadm) }));
}
