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

async function main(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'render':
      return renderCommand(rest);
    case 'explain': {
      const { explainCommand } = await import('./explain.js');
      return explainCommand(rest);
    }
    case 'diff': {
      const { diffCommand } = await import('./diff.js');
      return diffCommand(rest);
    }
    case 'trace': {
      const { traceCommand } = await import('./trace.js');
      return traceCommand(rest);
    }
    case 'doctor': {
      const { doctorCommand } = await import('./doctor.js');
      return doctorCommand(rest);
    }
    case 'lab':
      return runLabPlugin(rest);
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    default: {
      const { runCommand } = await import('./run.js');
      return runCommand(argv);
    }
  }
}

runMain('kube-proxy-ts', main);
