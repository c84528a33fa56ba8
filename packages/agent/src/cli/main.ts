#!/usr/bin/env -S node --max-semi-space-size=8 --no-allocation-site-pretenuring --heap-growing-percent=50
// (The flags are AGENT_NODE_FLAGS in src/util/node-flags.ts; a shebang cannot import them.)
// kube-proxy-ts: the node agent (default), and its tools. Subcommands keep kube-proxy's flags untouched:
// `kube-proxy-ts --config FILE` runs exactly as `kube-proxy --config FILE` does.
import { runLabPlugin } from './plugin.js';
import { runMain } from './process-main.js';
import { renderCommand } from './render.js';

const USAGE = `kube-proxy-ts: Kubernetes' service proxy in TypeScript

Usage:
  kube-proxy-ts [kube-proxy flags]        run the node agent (same flags and config file as kube-proxy)
  kube-proxy-ts render -f FILE [flags]    print the rules this node would program (see render --help)
  kube-proxy-ts explain service NAME -n NAMESPACE [flags]
                                          which endpoints each node uses for the Service, and why
                                          (see explain --help)
  kube-proxy-ts diff -f BEFORE -f AFTER [flags]
                                          what each backend would write for the change (see diff --help)
  kube-proxy-ts trace --to DEST[:PORT][/PROTO] [flags]
                                          follow real packets through this node's rules (see trace --help)
  kube-proxy-ts doctor [flags]            check this node's proxy and kernel, with remedies (see doctor --help)
  kube-proxy-ts lab up|down|status|exec|kubeconfig|apiserver
                                          a small cluster on this host (see lab --help; the lab is its own
                                          package, run as the kube-proxy-ts-lab command found on PATH)
`;

function printUsage(): number {
  process.stdout.write(USAGE);
  return 0;
}

type Subcommand = (argv: readonly string[]) => Promise<number> | number;

// The tools are imported when named, so that the agent and render load none of their modules.
const SUBCOMMANDS = new Map<string, Subcommand>([
  ['render', renderCommand],
  ['explain', async (argv) => (await import('./explain.js')).explainCommand(argv)],
  ['diff', async (argv) => (await import('./diff.js')).diffCommand(argv)],
  ['trace', async (argv) => (await import('./trace.js')).traceCommand(argv)],
  ['doctor', async (argv) => (await import('./doctor.js')).doctorCommand(argv)],
  ['lab', runLabPlugin],
  ['help', printUsage],
]);

async function main(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const subcommand = sub === undefined ? undefined : SUBCOMMANDS.get(sub);
  if (subcommand) return subcommand(rest);
  const { runCommand } = await import('./run.js');
  return runCommand(argv);
}

runMain('kube-proxy-ts', main);
