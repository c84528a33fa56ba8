// Running things inside a namespace, all through the CommandRunner seam: one-shot commands that must succeed,
// long-running processes (pod servers), and finding and stopping whatever still runs in a namespace.
import type { CommandOptions, CommandResult, CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { netnsCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { NetnsCommandError } from './errors.js';
import { checkNamespaceName } from './names.js';

/** Runs a command and resolves with its stdout; rejects with a NetnsCommandError saying what `action` failed. */
export async function runChecked(
  runner: CommandRunner,
  action: string,
  cmd: string,
  args: readonly string[],
  options?: CommandOptions,
): Promise<string> {
  const result = await runner.run(cmd, args, options);
  if (result.code !== 0) throw new NetnsCommandError(action, [cmd, ...args], result.code, result.stderr);
  return result.stdout;
}

/** A runner whose every command runs inside `namespace` (for a backend's `nft`, or `sysctl`). */
export function inNamespace(runner: CommandRunner, namespace: string): CommandRunner {
  return netnsCommandRunner(checkNamespaceName(namespace), runner);
}

/** A process left running inside a namespace. `exited` resolves (never rejects) when it ends. */
export interface NamespaceProcess {
  readonly namespace: string;
  readonly command: readonly string[];
  readonly exited: Promise<CommandResult>;
}

/**
 * Starts `cmd` inside `namespace` and returns at once. `ip netns exec` execs the command, so the process is the
 * namespace's own: namespacePids() finds it and killNamespaceProcesses() ends it.
 */
export function startInNamespace(
  runner: CommandRunner,
  namespace: string,
  cmd: string,
  args: readonly string[],
  options?: CommandOptions,
): NamespaceProcess {
  const exited = inNamespace(runner, namespace).run(cmd, args, options);
  return { namespace, command: [cmd, ...args], exited };
}

/** PIDs of the processes whose network namespace is `namespace` (`ip netns pids`). */
export async function namespacePids(runner: CommandRunner, namespace: string): Promise<number[]> {
  const out = await runChecked(runner, `list processes in ${namespace}`, 'ip', [
    'netns',
    'pids',
    checkNamespaceName(namespace),
  ]);
  return out
    .split(/\s+/)
    .filter((s) => /^\d+$/.test(s))
    .map(Number);
}

/**
 * Signals every process in `namespace`; resolves with the PIDs signalled. A process that is already gone is no
 * error (it may have exited between listing and signalling).
 */
export async function killNamespaceProcesses(
  runner: CommandRunner,
  namespace: string,
  signal: 'TERM' | 'KILL' = 'KILL',
): Promise<number[]> {
  const pids = await namespacePids(runner, namespace);
  if (pids.length > 0) await runner.run('kill', ['-s', signal, ...pids.map(String)]);
  return pids;
}
