// leftover-other-mode: the other mode's rules still in the kernel. In nftables mode, iptables mode's KUBE-*
// chains (kube-proxy removes them at start; chains that came back later are another kube-proxy's, or an old
// DaemonSet's); in iptables mode, nftables mode's `kube-proxy` tables. And, whatever the mode, kube-proxy chains in
// both iptables back ends (legacy and nft) at once: two writers that each think they own the node.
import type { CommandRunner } from '../../../netfilter/command.js';
import type { DoctorCheck } from '../types.js';
import { finding } from '../types.js';

// Chains kubelet (not kube-proxy) makes in iptables, also on nftables-mode nodes: never a leftover of ours.
const KUBELET_CHAINS = new Set([
  'KUBE-KUBELET-CANARY',
  'KUBE-FIREWALL',
  'KUBE-MARK-DROP',
  'KUBE-IPTABLES-HINT',
]);

/** kube-proxy's chains in iptables-save text, as "table CHAIN". */
export function kubeProxyChainsInSave(text: string): string[] {
  const out: string[] = [];
  let table = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1).trim();
    const m = /^:(KUBE-[A-Z0-9-]+) /.exec(line);
    if (m && !KUBELET_CHAINS.has(m[1] ?? '')) out.push(`${table} ${m[1] ?? ''}`);
  }
  return out;
}

async function chainsOf(runner: CommandRunner, save: string): Promise<string[] | undefined> {
  const r = await runner.run(save, []);
  return r.code === 0 ? kubeProxyChainsInSave(r.stdout) : undefined;
}

function sample(xs: readonly string[]): string {
  return xs.length <= 6 ? xs.join(', ') : `${xs.slice(0, 6).join(', ')} and ${xs.length - 6} more`;
}

export const leftoverOtherMode: DoctorCheck = {
  id: 'leftover-other-mode',
  title: "the other mode's rules still present; iptables-legacy and iptables-nft rules both present",
  async run(ctx) {
    const mode = ctx.settings?.mode;
    const evidence: string[] = [];
    const problems: string[] = [];
    const backends: Record<string, string[] | undefined> = {};
    for (const family of ['', '6'] as const) {
      for (const variant of ['legacy', 'nft'] as const) {
        const chains = await chainsOf(ctx.runner, `ip${family}tables-${variant}-save`);
        backends[`ip${family}tables-${variant}`] = chains;
        if (chains && chains.length > 0)
          evidence.push(
            `ip${family}tables-${variant}-save: ${chains.length} kube-proxy chains (${sample(chains)})`,
          );
      }
    }
    const tables: string[] = [];
    for (const family of ['ip', 'ip6']) {
      if ((await ctx.runner.run('nft', ['list', 'table', family, 'kube-proxy'])).code === 0)
        tables.push(`${family} kube-proxy`);
    }
    evidence.push(
      tables.length > 0 ? `nftables tables: ${tables.join(', ')}` : 'no nftables kube-proxy table',
    );
    const iptablesChains = Object.values(backends).flatMap((c) => c ?? []);
    if (mode === 'nftables' && iptablesChains.length > 0)
      problems.push(`nftables mode, but iptables mode's chains are present (${iptablesChains.length})`);
    if ((mode === 'iptables' || mode === 'ipvs') && tables.length > 0)
      problems.push(`${mode} mode, but nftables mode's table is present (${tables.join(', ')})`);
    for (const family of ['', '6']) {
      const legacy = backends[`ip${family}tables-legacy`] ?? [];
      const nft = backends[`ip${family}tables-nft`] ?? [];
      if (legacy.length > 0 && nft.length > 0)
        problems.push(`ip${family}tables-legacy and ip${family}tables-nft both hold kube-proxy chains`);
    }
    if (mode === undefined)
      evidence.push('the agent’s mode is unknown (no /configz): only the two-back-ends test applies');
    if (problems.length === 0)
      return finding('ok', `nothing of the other mode is left${mode ? ` (${mode} mode)` : ''}`, evidence);
    const remedy =
      mode === 'nftables'
        ? 'Make sure no other kube-proxy (an old DaemonSet, a static pod) runs on this node, then remove the chains: ' +
          'kube-proxy-ts --cleanup --proxy-mode iptables (or restart kube-proxy-ts, which removes them at start).'
        : mode === 'iptables'
          ? 'Make sure no nftables-mode kube-proxy runs here, then: nft delete table ip kube-proxy; nft delete table ip6 kube-proxy ' +
            '(or restart kube-proxy-ts, which removes them at start).'
          : 'Pick one iptables back end for every writer on the node (update-alternatives --display iptables), then ' +
            'remove the other one’s chains: iptables-legacy-save | grep KUBE- ; kube-proxy-ts --cleanup.';
    return finding('warn', problems.join('; '), evidence, remedy);
  },
};
