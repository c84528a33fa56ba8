// Starts src/lab/pod-server.ts inside a pod's namespace and stops it again. The server writes its PID to a ready
// file once every listener is bound; that file is both the readiness signal and the handle to stop it by PID.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult, CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { podServerArgs } from './pod-server.js';
import type { PodServerOptions } from './pod-server.js';
import { startInNamespace } from './exec.js';

export interface PodServerHandle {
  readonly pod: string;
  readonly namespace: string;
  readonly pid: number;
  readonly exited: Promise<CommandResult>;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartPodServerOptions {
  readonly name: string;
  readonly tcpPorts: readonly number[];
  readonly udpPorts: readonly number[];
  /** A directory for the ready file (the caller's temporary directory). */
  readonly stateDir: string;
  readonly maxLifetimeSeconds?: number;
  readonly readyTimeoutMs?: number;
  /** The server's own log (one line per request), for `kubectl logs`. */
  readonly logFile?: string;
}

// tsx as a file URL, so the child finds it whatever its working directory.
const TSX_IMPORT = import.meta.resolve('tsx');

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function readPid(path: string): number | undefined {
  if (!existsSync(path)) return undefined;
  const pid = Number(readFileSync(path, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Starts a pod server in `namespace`; resolves when it listens, rejects (naming the pod) when it cannot. */
export async function startPodServerIn(
  runner: CommandRunner,
  namespace: string,
  options: StartPodServerOptions,
): Promise<PodServerHandle> {
  const readyFile = join(options.stateDir, `${namespace}.ready`);
  const serverOptions: PodServerOptions = {
    name: options.name,
    tcpPorts: options.tcpPorts,
    udpPorts: options.udpPorts,
    readyFile,
    maxLifetimeSeconds: options.maxLifetimeSeconds ?? 900,
    ...(options.logFile !== undefined ? { logFile: options.logFile } : {}),
  };
  const proc = startInNamespace(runner, namespace, process.execPath, [
    '--import',
    TSX_IMPORT,
    ...podServerArgs(serverOptions),
  ]);
  let exitedEarly: CommandResult | undefined;
  void proc.exited.then((r) => (exitedEarly = r));

  const deadline = Date.now() + (options.readyTimeoutMs ?? 20_000);
  let pid: number | undefined;
  while ((pid = readPid(readyFile)) === undefined) {
    if (exitedEarly) {
      throw new Error(
        `pod server ${options.name} in ${namespace} exited ${exitedEarly.code}: ${exitedEarly.stderr.trim()}`,
      );
    }
    if (Date.now() > deadline)
      throw new Error(`pod server ${options.name} in ${namespace} not ready in time`);
    await delay(25);
  }
  const readyPid = pid;

  return {
    pod: options.name,
    namespace,
    pid: readyPid,
    exited: proc.exited,
    async stop(graceMs = 2000) {
      if (exitedEarly) return;
      await runner.run('kill', ['-s', 'TERM', String(readyPid)]);
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)));
      const ended = await Promise.race([proc.exited.then(() => true), graceOver]);
      clearTimeout(timer);
      if (!ended) {
        await runner.run('kill', ['-s', 'KILL', String(readyPid)]);
        await proc.exited;
      }
    },
  };
}
