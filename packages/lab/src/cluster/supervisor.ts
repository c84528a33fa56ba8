// Keeps one process running, as kubelet keeps a DaemonSet's container running: when it exits it is started
// again, after a back-off that grows while it keeps exiting quickly (CrashLoopBackOff, capped at 10 s here
// rather than upstream's 5 minutes, so the lab recovers while someone watches).
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { launchInNamespace, readPidFile, terminate } from './processes.js';

export interface SupervisedSpec {
  readonly name: string;
  readonly namespace: string;
  readonly argv: () => readonly string[];
  readonly pidFile: string;
  readonly log: string;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 10_000;
/** A run this long counts as healthy: the back-off starts over. */
const HEALTHY_RUN_MS = 10_000;

export class Supervised {
  private stopping = false;
  private current: Promise<unknown> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private backoffMs = MIN_BACKOFF_MS;
  private startedAt = 0;
  /** How many times the process was started (1 after the first start). */
  starts = 0;
  lastExit: { readonly code: number; readonly at: number } | undefined;
  private readonly startListeners = new Set<() => void>();

  constructor(
    private readonly runner: CommandRunner,
    private readonly spec: SupervisedSpec,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.stopping || this.current) return;
    this.startedAt = Date.now();
    this.starts++;
    const launched = launchInNamespace(this.runner, this.spec.namespace, this.spec.argv(), {
      pidFile: this.spec.pidFile,
      log: this.spec.log,
    });
    this.current = launched.exited;
    for (const l of this.startListeners) l();
    void launched.exited.then((r) => {
      this.current = undefined;
      this.lastExit = { code: r.code, at: Date.now() };
      if (this.stopping) return;
      const ranMs = Date.now() - this.startedAt;
      this.backoffMs =
        ranMs >= HEALTHY_RUN_MS ? MIN_BACKOFF_MS : Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
      const wait = ranMs >= HEALTHY_RUN_MS ? MIN_BACKOFF_MS : this.backoffMs;
      this.logger.info(`${this.spec.name} exited; restarting`, {
        code: r.code,
        stderr: r.stderr.trim().slice(0, 500),
        restartInMs: wait,
      });
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.start();
      }, wait);
    });
  }

  get running(): boolean {
    return this.current !== undefined;
  }

  pid(): number | undefined {
    return this.current ? readPidFile(this.spec.pidFile) : undefined;
  }

  onStart(fn: () => void): () => void {
    this.startListeners.add(fn);
    return () => this.startListeners.delete(fn);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; no restart afterwards. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    const running = this.current;
    const pid = this.pid();
    if (!running) return;
    await terminate(this.runner, pid, running, graceMs);
  }

  /** Sends SIGTERM without stopping supervision: the process is restarted (a pod deleted by its DaemonSet). */
  async kick(): Promise<void> {
    const pid = this.pid();
    if (pid !== undefined) await this.runner.run('kill', ['-s', 'TERM', String(pid)]);
  }
}
