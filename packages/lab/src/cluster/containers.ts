// The lab kubelet's container runtime: each container of a Pod that names a command is one process in the Pod's
// network namespace (its node's, for hostNetwork Pods), started through the CommandRunner seam with its output in
// a log file per run (`<n>.log`, n = the restart count it ran under: `kubectl logs --previous` reads n-1).
// restartPolicy is the kubelet's: Always restarts on every exit, OnFailure on a non-zero one, Never not at all.
// A restart waits a back-off that doubles while the container keeps exiting (1 s, 2 s, … capped at 10 s here
// rather than upstream's 5 minutes, so the lab recovers while someone watches) and starts over after a run of
// 10 s; while it waits the container is `waiting: CrashLoopBackOff`, with the last exit in lastState.
//
// Each run gets a fresh writable layer (`writable/` in the container's directory) as its working directory: what a
// container writes to relative paths lands there, counts against its ephemeral-storage limit (local-storage.ts)
// and goes with the Pod, as a container runtime's layer does.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CommandResult, CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import type { JsonObject } from '../apiserver/json.js';
import type { ResolvedContainer } from './container-spec.js';
import { launchInNamespace, readPidFile, terminate } from './processes.js';
import { followLog, InteractiveProcess } from './streams.js';
import type { StreamSession } from '../controllers/pod-lifecycle.js';

const MIN_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 10_000;
const HEALTHY_RUN_MS = 10_000;

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

/** The exit code the kubelet reports: a signal's death is 128 + its number (SIGTERM 143, SIGKILL 137). */
export function exitCodeOf(r: CommandResult): number {
  const signal = /killed by (SIG[A-Z0-9]+)\s*$/.exec(r.stderr)?.[1];
  const numbers: Readonly<Record<string, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  if (signal !== undefined) return 128 + (numbers[signal] ?? 0);
  return r.code;
}

export interface ContainerEvents {
  /** A process of this container started (its PID file is written by the launcher a moment later). */
  started?(container: ContainerProcess): void;
  /** Anything kubectl would see changed: state, restarts. */
  changed(): void;
}

/** A readinessProbe, reduced to what the lab runs: a command in the container's namespace, or an HTTP GET. */
export interface ReadinessProbe {
  readonly exec?: readonly string[];
  readonly httpGet?: { readonly host: string; readonly port: number; readonly path: string };
  readonly periodMs: number;
  readonly initialDelayMs: number;
  readonly timeoutMs: number;
}

/**
 * A probe on a node where everything runs `scale` times slower (a guest under emulation): asked that many times
 * less often and given that many times as long, so that probing does not crowd out what it probes.
 */
export function scaledProbe(probe: ReadinessProbe | undefined, scale: number): ReadinessProbe | undefined {
  if (probe === undefined || scale === 1) return probe;
  return { ...probe, periodMs: probe.periodMs * scale, timeoutMs: probe.timeoutMs * scale };
}

export function readinessProbeOf(container: JsonObject): ReadinessProbe | undefined {
  const probe = container.readinessProbe;
  if (typeof probe !== 'object' || probe === null || Array.isArray(probe)) return undefined;
  const p = probe as JsonObject;
  const seconds = (key: string, dflt: number): number =>
    typeof p[key] === 'number' && p[key] > 0 ? p[key] * 1000 : dflt;
  const timing = {
    periodMs: seconds('periodSeconds', 10_000),
    initialDelayMs: typeof p.initialDelaySeconds === 'number' ? p.initialDelaySeconds * 1000 : 0,
    timeoutMs: seconds('timeoutSeconds', 1_000),
  };
  const exec = p.exec as JsonObject | undefined;
  if (exec && Array.isArray(exec.command))
    return { ...timing, exec: exec.command.filter((w): w is string => typeof w === 'string') };
  const http = p.httpGet as JsonObject | undefined;
  if (http && typeof http.port === 'number')
    return {
      ...timing,
      httpGet: {
        host: typeof http.host === 'string' ? http.host : '127.0.0.1',
        port: http.port,
        path: typeof http.path === 'string' ? http.path : '/',
      },
    };
  return undefined;
}

/** A container's lifecycle.preStop exec hook (the command the kubelet runs before SIGTERM), if it has one. */
export function preStopOf(container: JsonObject): readonly string[] | undefined {
  const lifecycle = container.lifecycle;
  if (typeof lifecycle !== 'object' || lifecycle === null || Array.isArray(lifecycle)) return undefined;
  const exec = ((lifecycle as JsonObject).preStop as JsonObject | undefined)?.exec as JsonObject | undefined;
  if (!exec || !Array.isArray(exec.command)) return undefined;
  return exec.command.filter((w): w is string => typeof w === 'string');
}

/** The kubelet's minimumGracePeriodInSeconds: what SIGTERM still gets after a preStop hook used the rest. */
const MIN_GRACE_AFTER_PRESTOP_MS = 2_000;

export class ContainerProcess {
  restartCount = 0;
  /** Whether the readiness probe last passed (no probe: ready while running). */
  private probeReady = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private state: JsonObject = { waiting: { reason: 'ContainerCreating' } };
  private lastState: JsonObject = {};
  private current: Promise<CommandResult> | undefined;
  /** The live process of a container with stdin (kubectl run -i, attach). */
  private interactive: InteractiveProcess | undefined;
  private timer: NodeJS.Timeout | undefined;
  private backoffMs = MIN_BACKOFF_MS;
  private startedAt = 0;
  private stopping = false;
  /** Set when the container has ended for good (its restart policy does not restart it). */
  finished: { readonly exitCode: number } | undefined;
  readonly dir: string;

  constructor(
    private readonly runner: CommandRunner,
    private readonly namespace: string,
    readonly spec: ResolvedContainer & { readonly argv: readonly string[] },
    podDir: string,
    private readonly policy: RestartPolicy,
    private readonly podRef: string,
    private readonly events: ContainerEvents,
    private readonly logger: Logger,
    private readonly probe?: ReadinessProbe,
    private readonly preStop?: readonly string[],
  ) {
    // Absolute: the process opens its log after entering its writable layer.
    this.dir = resolve(podDir, 'containers', spec.name);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  /** The container's writable layer: its working directory, made afresh for each run. */
  get writableDir(): string {
    return join(this.dir, 'writable');
  }

  /** Removes the writable layer (the Pod is gone; a restart makes a new one). */
  removeWritableLayer(): void {
    rmSync(this.writableDir, { recursive: true, force: true });
  }

  get name(): string {
    return this.spec.name;
  }
  get pidFile(): string {
    return join(this.dir, 'pid');
  }
  /**
   * The log of the latest run (the one running, or during a back-off the one that just ended, as a kubelet shows
   * it), or of the run before the running one (`--previous`); undefined when there was none.
   */
  logFile(previous = false): string | undefined {
    // Between runs (a back-off) the last run is both the latest and the previous one: `kubectl logs --previous`
    // on a pod in CrashLoopBackOff shows why it crashed, as with a real kubelet.
    const n = this.runs - 1 - (previous && this.running ? 1 : 0);
    return n < 0 ? undefined : join(this.dir, `${n}.log`);
  }
  /** Runs started so far; run n logs to `<n>.log`. */
  private runs = 0;
  get running(): boolean {
    return this.current !== undefined;
  }
  /** Whether it has run at all (an app container of a Pod still initializing has not). */
  get everStarted(): boolean {
    return this.runs > 0;
  }
  pid(): number | undefined {
    return this.current ? readPidFile(this.pidFile) : undefined;
  }

  start(): void {
    if (this.stopping || this.current) return;
    this.startedAt = Date.now();
    this.runs++;
    const log = this.logFile() ?? join(this.dir, '0.log');
    // A new run is a new container: what the last one wrote is gone, as with a runtime's fresh layer.
    this.removeWritableLayer();
    mkdirSync(this.writableDir, { recursive: true, mode: 0o755 });
    let launched: { readonly exited: Promise<CommandResult> };
    if (this.spec.stdin) {
      // stdin needs a pipe the API server's attach can write to: a live process, not a launched one.
      writeFileSync(log, '', { mode: 0o600 });
      const argv = ['sh', '-c', 'cd "$0" && exec "$@"', this.writableDir, ...this.spec.argv];
      const p = new InteractiveProcess(this.namespace, argv, this.spec.env, log, {
        tty: this.spec.tty,
        stdinOnce: this.spec.stdinOnce,
      });
      this.interactive = p;
      if (p.pid !== undefined) writeFileSync(this.pidFile, `${p.pid}\n`);
      launched = { exited: p.exited.then((r) => ({ code: r.code, stdout: '', stderr: r.stderr })) };
    } else {
      this.interactive = undefined;
      // A container runtime (runc, under `lab up --image`) joins the namespace itself and needs the host's
      // mounts: `ip netns exec` would hide /sys/fs/cgroup behind the namespace's own /sys.
      launched = launchInNamespace(
        this.runner,
        this.spec.joinsNamespace === true ? undefined : this.namespace,
        this.spec.argv,
        { pidFile: this.pidFile, log, workDir: this.writableDir },
        this.spec.env,
      );
    }
    this.current = launched.exited;
    this.state = { running: { startedAt: new Date(this.startedAt).toISOString().replace(/\.\d+Z$/, 'Z') } };
    this.events.started?.(this);
    this.events.changed();
    void launched.exited.then((r) => this.exited(r));
    if (this.probe) this.scheduleProbe(launched.exited, this.probe.initialDelayMs);
  }

  get ready(): boolean {
    return this.running && (this.probe === undefined || this.probeReady);
  }

  /**
   * Probes while this run lasts, its termination included (the kubelet keeps readiness probes running while a
   * container drains: an agnhost netexec answering /readyz 503 after SIGTERM leaves its Service's ready endpoints
   * then); a change of the answer is a change kubectl sees (READY, the pod's Ready).
   */
  private scheduleProbe(run: Promise<CommandResult>, delayMs: number): void {
    const probe = this.probe;
    if (!probe) return;
    this.probeTimer = setTimeout(() => {
      void (async () => {
        if (this.current !== run) return;
        const ok = await this.runProbe(probe);
        if (this.current !== run) return;
        if (ok !== this.probeReady) {
          this.probeReady = ok;
          this.events.changed();
        }
        this.scheduleProbe(run, probe.periodMs);
      })();
    }, delayMs);
  }

  private async runProbe(probe: ReadinessProbe): Promise<boolean> {
    const inNs = ['netns', 'exec', this.namespace];
    if (probe.exec) {
      const r = await this.runner.run('ip', [...inNs, ...probe.exec], { timeoutMs: probe.timeoutMs });
      return r.code === 0;
    }
    const g = probe.httpGet;
    if (!g) return true;
    const url = `http://${g.host}:${g.port}${g.path}`;
    const r = await this.runner.run(
      'ip',
      [
        ...inNs,
        'curl',
        '-s',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '--max-time',
        String(probe.timeoutMs / 1000),
        url,
      ],
      { timeoutMs: probe.timeoutMs + 1000 },
    );
    const code = Number(r.stdout.trim());
    return code >= 200 && code < 400;
  }

  private exited(r: CommandResult): void {
    this.current = undefined;
    this.probeReady = false;
    if (this.probeTimer) clearTimeout(this.probeTimer);
    // A runtime killed with SIGKILL (the kubelet's last resort) leaves its container behind: its clean-up ends it.
    if (this.spec.afterExit) {
      const [cmd = 'true', ...args] = this.spec.afterExit;
      void this.runner.run(cmd, args);
    }
    const exitCode = exitCodeOf(r);
    const terminated = {
      exitCode,
      reason: exitCode === 0 ? 'Completed' : 'Error',
      startedAt: new Date(this.startedAt).toISOString().replace(/\.\d+Z$/, 'Z'),
      finishedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    if (this.stopping) {
      this.state = { terminated };
      // As the kubelet reports a container it killed: how it ended (a proxy that honours SIGTERM exits 0).
      this.logger.info('container stopped', { pod: this.podRef, container: this.name, exitCode });
      this.events.changed();
      return;
    }
    const restart = this.policy === 'Always' || (this.policy === 'OnFailure' && exitCode !== 0);
    if (!restart) {
      this.state = { terminated };
      this.finished = { exitCode };
      this.events.changed();
      return;
    }
    const ranMs = Date.now() - this.startedAt;
    this.backoffMs = ranMs >= HEALTHY_RUN_MS ? MIN_BACKOFF_MS : Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    const wait = ranMs >= HEALTHY_RUN_MS ? MIN_BACKOFF_MS : this.backoffMs;
    this.lastState = { terminated };
    this.restartCount++;
    this.state = {
      waiting: {
        reason: 'CrashLoopBackOff',
        message: `back-off ${Math.round(wait / 1000)}s restarting failed container=${this.name} pod=${this.podRef}`,
      },
    };
    this.logger.info('container exited; restarting after back-off', {
      pod: this.podRef,
      container: this.name,
      exitCode,
      restartInMs: wait,
    });
    this.events.changed();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.start();
    }, wait);
  }

  /** `kubectl attach`: the live process's streams (stdin containers), or else its output from now on. */
  attach(session: StreamSession): void {
    const run = this.current;
    if (this.interactive && run) return this.interactive.attach(session);
    const log = this.logFile();
    if (!run || log === undefined) return session.finish({ error: `container ${this.name} is not running` });
    followLog(
      log,
      session,
      run.then((r) => exitCodeOf(r)),
    );
  }

  /** status.containerStatuses[i] for this container. */
  status(): JsonObject {
    return {
      name: this.name,
      image: this.spec.image,
      imageID: '',
      containerID: `lab://${this.podRef}/${this.name}`,
      ready: this.ready,
      started: this.running,
      restartCount: this.restartCount,
      state: this.state,
      lastState: this.lastState,
    };
  }

  /** SIGTERM, then SIGKILL after `graceMs`; never restarted afterwards. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    // The readiness probe goes on until the process has ended (exited() stops it).
    const running = this.current;
    if (!running) return;
    // As the kubelet's killContainer: the preStop hook first, within the grace period; SIGTERM then gets what is
    // left of it (at least 2 s).
    let grace = graceMs;
    if (this.preStop && this.preStop.length > 0) {
      const started = Date.now();
      await this.runner.run('ip', ['netns', 'exec', this.namespace, ...this.preStop], { timeoutMs: graceMs });
      grace = Math.max(MIN_GRACE_AFTER_PRESTOP_MS, graceMs - (Date.now() - started));
    }
    const pid = this.pid();
    await terminate(this.runner, pid, running, grace);
  }

  /** SIGTERM without stopping: the restart policy decides what follows (a config file change does this). */
  async kick(): Promise<void> {
    const pid = this.pid();
    if (pid !== undefined) await this.runner.run('kill', ['-s', 'TERM', String(pid)]);
  }
}

/** The phase of a Pod whose containers are these: Running until every one has ended for good. */
export function podPhase(containers: readonly ContainerProcess[]): 'Running' | 'Succeeded' | 'Failed' {
  if (containers.some((c) => c.finished === undefined)) return 'Running';
  return containers.every((c) => c.finished?.exitCode === 0) ? 'Succeeded' : 'Failed';
}
