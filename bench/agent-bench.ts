// KPTS_BENCH_MODES=agent: the agent process as a node runs it (issue 28), where the other modes hand objects to the
// change trackers in-process. For each (layout, size) a node namespace of its own (loopback, and eth0 with the
// node's IP, as the e2e tests' node) and in it one run of bench/agent-run.ts: an API server holding the Node, N
// Services and N EndpointSlices of 10 endpoints (bench/workload.ts's cluster), and the compiled agent started
// against it with a kubeconfig, then restarted. Rows: bench/agent-table.ts; method and results:
// docs/performance.md, "The agent process".
//   npm run build; KPTS_BENCH_MODES=agent KPTS_BENCH_AGENT_SIZES=1000,10000,100000 node dist/bench/main.js
// KPTS_BENCH_AGENT_SIZES: Services (default 1000,10000); KPTS_BENCH_AGENT_LAYOUTS: flat,upstream (default both);
// KPTS_BENCH_AGENT_UPSTREAM_MAX: upstream's layout only up to this size (default 1000: its first sync at
// 10,000 Services and more is the in-process bench's business, and slow); KPTS_BENCH_AGENT_MARKDOWN=FILE also
// writes the table as markdown; KPTS_BENCH_AGENT_FLAGS: more agent flags, space-separated (e.g.
// `--kube-api-qps=0`: no client-side rate limit, to see the list's own cost beside the default qps 5 / burst 10); KPTS_BENCH_AGENT_BIN: the agent's main.js to run (default: the workspace's build);
// KPTS_BENCH_AGENT_NO_STATE=1: no --nftables-state-dir, so the restart refills the table (a build from before the
// flag needs it).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import { hostCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { runChecked } from '@kube-proxy-ts/netns/exec.js';
import { createNamespace, deleteNamespace } from '@kube-proxy-ts/netns/namespace.js';
import type { AgentRow } from './agent-table.js';
import { agentMarkdown, agentTable } from './agent-table.js';
import { runNamespaceChild } from './namespace-child.js';
import { AGENT_CHILD_ENV, NODE_IP, ROW_MARK } from './agent-workload.js';

interface AgentSpec {
  readonly layout: NftablesLayoutName;
  readonly size: number;
  readonly extraFlags: readonly string[];
}

function listOf(name: string, fallback: string): string[] {
  return (process.env[name] ?? fallback)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The (layout, size) runs, smallest size first. */
export function agentRuns(): AgentSpec[] {
  const sizes = listOf('KPTS_BENCH_AGENT_SIZES', '1000,10000').map(Number);
  const layouts = listOf('KPTS_BENCH_AGENT_LAYOUTS', 'flat,upstream') as NftablesLayoutName[];
  const upstreamMax = Number(process.env.KPTS_BENCH_AGENT_UPSTREAM_MAX ?? 1000);
  const extraFlags = (process.env.KPTS_BENCH_AGENT_FLAGS ?? '').split(' ').filter((f) => f !== '');
  const runs: AgentSpec[] = [];
  for (const size of [...sizes].sort((a, b) => a - b))
    for (const layout of layouts)
      if (Number.isInteger(size) && size > 0 && (layout !== 'upstream' || size <= upstreamMax))
        runs.push({ layout, size, extraFlags });
  return runs;
}

async function nodeNamespace(ns: string): Promise<void> {
  await createNamespace(hostCommandRunner, ns);
  // The node's own address on a link (a veth pair with both ends inside: no dummy links on every kernel).
  for (const args of [
    ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0-peer'],
    ['addr', 'add', `${NODE_IP}/24`, 'dev', 'eth0'],
    ['link', 'set', 'eth0-peer', 'up'],
    ['link', 'set', 'eth0', 'up'],
  ])
    await runChecked(hostCommandRunner, `ip ${args.join(' ')} in ${ns}`, 'ip', ['-n', ns, ...args]);
}

function runInNamespace(ns: string, spec: AgentSpec): Promise<AgentRow> {
  const script = fileURLToPath(new URL('./agent-run.js', import.meta.url));
  return runNamespaceChild<AgentRow>({
    ns,
    argv: [process.execPath, ...process.execArgv, script],
    env: { [AGENT_CHILD_ENV]: JSON.stringify(spec) },
    mark: ROW_MARK,
    what: `agent bench ${spec.layout} ${spec.size}`,
  });
}

/** "nft (peak 40 MiB)": each child process name seen, with its largest peak RSS over all rows. */
function childSummary(rows: readonly AgentRow[]): string {
  const peaks = new Map<string, number>();
  for (const r of rows)
    for (const [name, mib] of Object.entries(r.children))
      peaks.set(name, Math.max(peaks.get(name) ?? 0, mib));
  return [...peaks].map(([name, mib]) => `${name} (peak ${mib.toFixed(0)} MiB)`).join(', ') || 'none';
}

export async function runAgentBench(): Promise<void> {
  const rows: AgentRow[] = [];
  for (const spec of agentRuns()) {
    const ns = `kpts${randomBytes(3).toString('hex')}-agent`;
    // main.ts exits on SIGINT: its handler runs after this one, so the namespace goes synchronously.
    const remove = (): void => {
      try {
        execFileSync('ip', ['netns', 'del', ns]);
      } catch {
        // not made yet, or already gone
      }
    };
    process.prependOnceListener('SIGINT', remove);
    try {
      await nodeNamespace(ns);
      process.stderr.write(`agent ${spec.layout} ${spec.size} Services...\n`);
      rows.push(await runInNamespace(ns, spec));
    } finally {
      process.off('SIGINT', remove);
      await deleteNamespace(hostCommandRunner, ns).catch(() => undefined);
    }
  }
  if (rows.length === 0) return;
  console.log(
    `\nThe agent process (kube-proxy-ts run, nftables mode, its default executor: ` +
      `${[...new Set(rows.map((r) => r.executor))].join(', ')}; children seen during its syncs: ` +
      `${childSummary(rows)}). Times from the agent's spawn; ` +
      `write→kernel: the API server's watch write → nft monitor's line, ${rows[0]?.changeMs.length} runs; ` +
      `load: 1-minute load average at the run's start → end.`,
  );
  console.log(agentTable(rows));
  const md = process.env.KPTS_BENCH_AGENT_MARKDOWN;
  if (md) writeFileSync(md, `${agentMarkdown(rows)}\n`);
}
