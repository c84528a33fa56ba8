#!/usr/bin/env -S node --max-semi-space-size=2
// (The flag is AGENT_NODE_FLAGS in src/util/node-flags.ts; a shebang cannot import it.)
// kube-proxy-ts: the node agent (default), and its tools. Subcommands keep kube-proxy's flags untouched:
// `kube-proxy-ts --config FILE` runs exactly as `kube-proxy --config FILE` does.
import { renderCommand } from './render.js';

const USAGE = `kube-proxy-ts: Kubernetes' service proxy in TypeScript

Usage:
  kube-proxy-ts [kube-proxy flags]        run the node agent (same flags and config file as kube-proxy)
  kube-proxy-ts render -f FILE [flags]    print the rules this node would program (see render --help)
  kube-proxy-ts lab up|down|status|exec|kubeconfig|apiserver
                                          a small cluster on this host (see lab --help)
`;

async function main(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'render':
      return renderCommand(rest);
    case 'lab': {
      const { labCommand } = await import('./lab.js');
      return labCommand(rest);
    }
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    default: {
      const { runCommand } = await import('./run.js');
      return runCommand(argv);
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // Exit now: the agent has closed what it owns, and a pooled keep-alive socket to the API server must not hold
    // a stopping proxy for seconds (a DaemonSet rollout, or the lab's config change, waits on this exit).
    process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(
      `kube-proxy-ts: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
