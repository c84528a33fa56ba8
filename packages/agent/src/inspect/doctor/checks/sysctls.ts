// sysctls: the kernel settings a service proxy depends on.
// - net.ipv4.ip_forward: without it a node forwards nothing, so no pod or remote endpoint is reachable.
// - net.ipv4.conf.all.route_localnet: iptables mode with localhostNodePorts (the default) needs it for NodePorts
//   on 127.0.0.1 (kube-proxy sets it at start; something reset it).
// - net.bridge.bridge-nf-call-iptables: where pods hang off a Linux bridge, same-node replies are bridged, not
//   routed; without it they skip conntrack and are never un-DNATed (the client sees the pod's address and drops
//   the reply).
// - ipvs mode: the sysctls the agent sets at start (backends/ipvs/sysctls.ts): net.ipv4.vs.conntrack above all,
//   without which IPVS's packets skip conntrack and NodePort and hairpin traffic is never masqueraded.
import { ipvsSysctlValues } from '../../../backends/ipvs/sysctls.js';
import type { CommandRunner } from '../../../netfilter/command.js';
import type { DoctorCheck, Severity } from '../types.js';
import { finding } from '../types.js';
import { readSysctl } from './sysctl-read.js';

export const sysctls: DoctorCheck = {
  id: 'sysctls',
  title:
    'ip_forward, route_localnet (localhost NodePorts), bridge-nf-call-iptables (bridged pods), IPVS (ipvs mode)',
  async run(ctx) {
    const evidence: string[] = [];
    const problems: { severity: Severity; text: string; fix: string }[] = [];
    const forward = await readSysctl(ctx.runner, 'net.ipv4.ip_forward');
    evidence.push(`net.ipv4.ip_forward = ${forward ?? '(unreadable)'}`);
    if (forward !== '1')
      problems.push({
        severity: 'fail',
        text: 'IPv4 forwarding is off',
        fix: 'sysctl -w net.ipv4.ip_forward=1',
      });

    if (ctx.settings?.mode === 'iptables' && ctx.settings.localhostNodePorts) {
      const localnet = await readSysctl(ctx.runner, 'net.ipv4.conf.all.route_localnet');
      evidence.push(
        `net.ipv4.conf.all.route_localnet = ${localnet ?? '(unreadable)'} (iptables mode, localhostNodePorts on)`,
      );
      if (localnet !== '1')
        problems.push({
          severity: 'warn',
          text: 'localhost NodePorts are on but route_localnet is off',
          fix: 'sysctl -w net.ipv4.conf.all.route_localnet=1 (or iptables.localhostNodePorts: false)',
        });
    }

    if (ctx.settings?.mode === 'ipvs')
      problems.push(...(await ipvsProblems(ctx.runner, ctx.settings.strictARP === true, evidence)));

    const bridges = await ctx.runner.run('ip', ['-o', 'link', 'show', 'type', 'bridge']);
    const names =
      bridges.code === 0
        ? bridges.stdout
            .split('\n')
            .map((l) => /^\d+:\s+([^:@]+)/.exec(l)?.[1])
            .filter((n): n is string => n !== undefined)
        : [];
    const bridged: string[] = [];
    for (const b of names) {
      const ports = await ctx.runner.run('ip', ['-o', 'link', 'show', 'master', b]);
      if (ports.code === 0 && ports.stdout.trim() !== '') bridged.push(b);
    }
    if (bridged.length > 0) {
      const nf = await readSysctl(ctx.runner, 'net.bridge.bridge-nf-call-iptables');
      evidence.push(
        `bridges with ports: ${bridged.join(', ')}; net.bridge.bridge-nf-call-iptables = ${nf ?? '(absent: br_netfilter not loaded)'}`,
      );
      if (nf !== '1')
        problems.push({
          severity: 'fail',
          text: `pods are bridged (${bridged.join(', ')}) but bridged packets skip netfilter`,
          fix: 'modprobe br_netfilter; sysctl -w net.bridge.bridge-nf-call-iptables=1',
        });
    } else evidence.push('no bridge with ports: bridge-nf-call-iptables does not matter here');

    if (problems.length === 0)
      return finding('ok', 'the kernel settings kube-proxy needs are in place', evidence);
    const severity: Severity = problems.some((p) => p.severity === 'fail') ? 'fail' : 'warn';
    return finding(
      severity,
      problems.map((p) => p.text).join('; '),
      evidence,
      problems.map((p) => p.fix).join('; '),
    );
  },
};

/**
 * ipvs mode's sysctls as the node has them, against what the agent sets at start; the node's kernel release (from
 * `uname -r` on the node) decides whether conn_reuse_mode matters.
 */
async function ipvsProblems(
  runner: CommandRunner,
  strictARP: boolean,
  evidence: string[],
): Promise<{ severity: Severity; text: string; fix: string }[]> {
  const uname = await runner.run('uname', ['-r']);
  const kernel = uname.code === 0 ? uname.stdout.trim() : undefined;
  const problems: { severity: Severity; text: string; fix: string }[] = [];
  const wanted = ipvsSysctlValues(strictARP, kernel).filter(([path]) => !path.endsWith('/ip_forward'));
  for (const [path, value] of wanted) {
    const key = path.replace(/^proc\/sys\//, '').replace(/\//g, '.');
    const got = await readSysctl(runner, key);
    evidence.push(`${key} = ${got ?? '(unreadable: is ip_vs loaded?)'} (ipvs mode sets ${value})`);
    if (got === String(value)) continue;
    problems.push({
      // Without conntrack (or with ARP answered for kube-ipvs0's addresses under strictARP) traffic breaks; the
      // expiry settings only make failover slower.
      severity: key.includes('expire') ? 'warn' : 'fail',
      text: `${key} is ${got ?? 'unreadable'}, ipvs mode needs ${value}`,
      fix: `sysctl -w ${key}=${value} (kube-proxy sets it at start: restart its pod after finding what reset it)`,
    });
  }
  return problems;
}
