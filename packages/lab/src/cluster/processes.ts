// Long-running processes the lab starts inside namespaces (relays, proxies), through the CommandRunner seam:
// `sh` writes its PID to a file and execs `ip netns exec NS …`, which execs the program, so the PID in the file is
// the program's own, and its output goes straight to a log file instead of piling up in the lab's memory.
import { readFileSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CommandResult, CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { checkNamespaceName } from '@kube-proxy-ts/netns/index.js';
import { AGENT_NODE_FLAGS } from 'kube-proxy-ts/util/node-flags.js';

// $KPTS_PIDFILE, $KPTS_LOG and $KPTS_WORKDIR come from the environment, so no path is ever spliced into shell text.
// The working directory (a container's writable layer) is entered first: a program that cannot start there does
// not start at all (125, as a runtime that cannot set up a container exits).
const LAUNCH =
  'if [ -n "$KPTS_WORKDIR" ]; then cd "$KPTS_WORKDIR" || exit 125; fi; ' +
  'echo $$ > "$KPTS_PIDFILE"; exec "$@" >>"$KPTS_LOG" 2>&1 </dev/null';

export interface LaunchedProcess {
  /** Resolves (never rejects) when the process has ended. */
  readonly exited: Promise<CommandResult>;
  readonly pidFile: string;
}

/**
 * Starts `argv` inside `namespace` (or, with none, on the host) with its PID and output in `files`, in `workDir`
 * when given (absolute paths: the log is opened after the change of directory).
 */
export function launchInNamespace(
  runner: CommandRunner,
  namespace: string | undefined,
  argv: readonly string[],
  files: { readonly pidFile: string; readonly log: string; readonly workDir?: string },
  env: Readonly<Record<string, string>> = {},
): LaunchedProcess {
  const inNamespace = namespace === undefined ? [] : ['ip', 'netns', 'exec', checkNamespaceName(namespace)];
  const exited = runner.run('sh', ['-c', LAUNCH, 'sh', ...inNamespace, ...argv], {
    env: { ...env, KPTS_PIDFILE: files.pidFile, KPTS_LOG: files.log, KPTS_WORKDIR: files.workDir ?? '' },
  });
  return { exited, pidFile: files.pidFile };
}

export function readPidFile(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * argv that runs the agent's CLI (the kube-proxy-ts package's bin) with `args`, from wherever that package
 * resolves for the lab itself: its compiled dist/cli/main.js when the lab runs compiled (what `npm start` does),
 * its src/cli/main.ts under tsx when the lab runs from source (tests, under the `kpts-source` condition).
 */
export function agentCliArgv(args: readonly string[]): string[] {
  return nodeArgv(fileURLToPath(import.meta.resolve('kube-proxy-ts/cli/main.js')), AGENT_NODE_FLAGS, args);
}

/** argv that runs the lab's agnhost (`@kube-proxy-ts/netns`'s agnhost/main) with `args`, compiled or from source. */
export function agnhostArgv(args: readonly string[]): string[] {
  return nodeArgv(fileURLToPath(import.meta.resolve('@kube-proxy-ts/netns/agnhost/main.js')), [], args);
}

/** argv that runs the lab's own CLI (`kube-proxy-ts-lab`) with `args`, compiled or from source as the lab runs. */
export function labCliArgv(args: readonly string[]): string[] {
  const self = fileURLToPath(import.meta.url);
  const main = fileURLToPath(new URL(`../cli/main${self.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));
  return nodeArgv(main, [], args);
}

function nodeArgv(main: string, flags: readonly string[], args: readonly string[]): string[] {
  if (main.endsWith('.ts')) {
    const source = ['--import', import.meta.resolve('tsx'), '--conditions=kpts-source'];
    return [process.execPath, ...flags, ...source, main, ...args];
  }
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
  return [process.execPath, ...flags, main, ...args];
}

/**
 * Ends a launched process as the kubelet ends a container: SIGTERM, then SIGKILL if it is still running after
 * `graceMs`. Resolves once `running` (the process's end) has settled, or right away when there is no PID.
 */
export async function terminate(
  runner: CommandRunner,
  pid: number | undefined,
  running: Promise<unknown>,
  graceMs: number,
): Promise<void> {
  if (pid !== undefined) await runner.run('kill', ['-s', 'TERM', String(pid)]);
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([
    running.then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs))),
  ]);
  clearTimeout(timer);
  if (!ended && pid !== undefined) {
    await runner.run('kill', ['-s', 'KILL', String(pid)]);
    await running;
  }
}
