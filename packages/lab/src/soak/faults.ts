// The soak's optional faults.
//   - A competing xtables lock holder per node: another rule writer (a CNI plugin, a firewall daemon) that takes
//     the node's lock for 400 ms, lets go for 200 ms, and again (seed 003). It holds the lab node's own lock file
//     (lab/cluster/node-env.ts), never the host's. nftables mode takes no xtables lock: there it shows that.
//   - Proxy restarts: the node's kube-proxy process is sent SIGTERM or SIGKILL (alternating); its DaemonSet pod's
//     container restarts it, as the kubelet would. The soak waits for the new process's first sync.
//   - API server outages: through `outage` (the lab cuts its proxies' connections and refuses new ones for a few
//     seconds, which is what a node sees of an API server restart).
import { readlinkSync } from 'node:fs';
import type { CommandRunner, StreamHandle, StreamRunner } from 'kube-proxy-ts/netfilter/command.js';
import { readPidFile } from '../cluster/processes.js';
import type { Outcome } from './load-generator.js';

export const LOCK_HOLD_MS = 400;
export const LOCK_GAP_MS = 200;

/** Starts a lock holder on each file; stop() ends them. */
export function startLockHolders(
  streams: StreamRunner,
  lockFiles: readonly string[],
): { stop(): Promise<void> } {
  const script = `while :; do flock -x "$1" sleep ${LOCK_HOLD_MS / 1000}; sleep ${LOCK_GAP_MS / 1000}; done`;
  const handles: StreamHandle[] = lockFiles.map((f) =>
    streams.stream('sh', ['-c', script, 'sh', f], () => undefined),
  );
  return {
    async stop() {
      await Promise.all(handles.map((h) => h.stop()));
    },
  };
}

/** A connection open at a restart that failed after it. */
export interface LostConnection {
  readonly connection: string;
  readonly outcome: Outcome;
  /** The failure's time and the connection's last answer before it, in ms after the stop. */
  readonly failedAfterMs: number;
  readonly lastAnswerAfterMs: number;
}

export interface ProxyRestart {
  readonly node: string;
  readonly signal: 'SIGTERM' | 'SIGKILL';
  readonly at: number;
  readonly pid: number;
  /** When the new process had synced (ms); undefined if it had not by the deadline. */
  syncedAt?: number;
  /** Long-lived connections open when the proxy was stopped, and those still answering after its resync. */
  connectionsOpen?: number;
  connectionsSurvived?: number;
  /** Connections open at the stop whose load ended, answering, before the resync: neither survived nor lost. */
  connectionsUnmeasured?: number;
  /** The connections it broke: which, how, and when after the stop. */
  connectionsLost?: readonly LostConnection[];
  /** When the stop was sent, in seconds after the soak's start (filled in by the report). */
  atSecond?: number;
}

/** The PID of the node's kube-proxy now (its PID file, linked by the lab to the current container's). */
export function proxyPid(pidFileLink: string): number | undefined {
  try {
    readlinkSync(pidFileLink);
  } catch {
    return undefined;
  }
  return readPidFile(pidFileLink);
}

export async function signalProxy(
  runner: CommandRunner,
  node: string,
  pidFileLink: string,
  signal: 'SIGTERM' | 'SIGKILL',
): Promise<ProxyRestart | string> {
  const pid = proxyPid(pidFileLink);
  if (pid === undefined) return `no kube-proxy PID for ${node} (${pidFileLink})`;
  const r = await runner.run('kill', ['-s', signal.slice(3), String(pid)]);
  if (r.code !== 0) return `kill -s ${signal.slice(3)} ${pid}: ${r.stderr.trim()}`;
  return { node, signal, at: Date.now(), pid };
}
