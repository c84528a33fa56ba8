// `kube-proxy-ts lab …`: the lab is a package of its own (packages/lab), which the agent never imports. As kubectl
// runs `kubectl-foo` for `kubectl foo`, the agent's CLI runs the `kube-proxy-ts-lab` executable it finds on PATH,
// so a node that has only the agent has no lab code, and a machine with the lab keeps the commands people type.
import { spawn } from 'node:child_process';
import { constants as os } from 'node:os';
import { findOnPath } from '../util/find-on-path.js';

export const LAB_COMMAND = 'kube-proxy-ts-lab';

const FORWARDED = ['SIGTERM', 'SIGHUP'] as const;

/**
 * Runs the lab's command with `args` and resolves with its exit code (128 + the signal's number if a signal ended
 * it). SIGTERM and SIGHUP sent to us are passed on. Ctrl-C is not: the terminal sends SIGINT to the whole
 * foreground process group, the lab included, and a second SIGINT would cut the lab's clean-up short.
 */
export async function runLabPlugin(args: readonly string[]): Promise<number> {
  const command = findOnPath(LAB_COMMAND);
  if (command === undefined) {
    process.stderr.write(
      `kube-proxy-ts: 'lab' is the lab's command, and ${LAB_COMMAND} is not on PATH: the lab is the ` +
        `@kube-proxy-ts/lab package of the kube-proxy-ts repository (bash scripts/setup.sh installs it)\n`,
    );
    return 1;
  }
  const child = spawn(command, args, { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
  const ignore = (): void => undefined;
  for (const signal of FORWARDED) process.on(signal, forward);
  process.on('SIGINT', ignore);
  try {
    return await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? signalNumber(signal) : 0)));
    });
  } finally {
    for (const signal of FORWARDED) process.off(signal, forward);
    process.off('SIGINT', ignore);
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  return os.signals[signal] ?? 0;
}
