#!/usr/bin/env -S node --max-semi-space-size=8 --no-allocation-site-pretenuring --heap-growing-percent=50
// (The flags are AGENT_NODE_FLAGS in src/util/node-flags.ts; a shebang cannot import them.)
// kube-proxy-ts: the node agent (default), and its tools. Subcommands keep kube-proxy's flags untouched:
// `kube-proxy-ts --config FILE` runs exactly as `kube-proxy --config FILE` does.
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
                                          a small cluster on this host (see lab --help)
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

/** What a shell reports for a command killed by SIGPIPE (128 + 13), which is how a reader closing early ends us. */
const EXIT_READER_GONE = 141;

function isBrokenPipe(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'EPIPE';
}

/**
 * Resolves once everything written to `stream` so far has reached the OS. A pipe's writes are asynchronous in
 * Node.js, so process.exit() right after a large write drops whatever the reader has not taken yet (`render | wc`
 * saw 436 of 114,078 lines). The empty write's callback runs after every earlier write has completed.
 */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) {
      resolve();
      return;
    }
    stream.write('', (error) => {
      // A reader that closed early is handled by the 'error' listener below; anything else cannot be reported.
      if (!isBrokenPipe(error)) resolve();
    });
  });
}

// A reader that stops early (`render | head -1`) makes the next write fail with EPIPE. That is not an error of
// ours: stop at once and quietly, as a Unix tool killed by SIGPIPE would (Node.js ignores the signal itself).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: unknown) => {
    if (isBrokenPipe(error)) process.exit(EXIT_READER_GONE);
    throw error;
  });
}

async function exitWhenFlushed(code: number): Promise<never> {
  process.exitCode = code;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  // Exit explicitly even so: the agent has closed what it owns, and a pooled keep-alive socket to the API server
  // must not hold a stopping proxy for seconds (a DaemonSet rollout, or the lab's config change, waits on this).
  process.exit(code);
}

void main(process.argv.slice(2)).then(exitWhenFlushed, (error: unknown) => {
  process.stderr.write(
    `kube-proxy-ts: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return exitWhenFlushed(1);
});
