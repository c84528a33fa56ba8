// A Pod's containers in the order the kubelet starts and stops them (upstream kuberuntime's computePodActions,
// reduced to what the lab runs). Init containers go one after another: a plain one runs to completion (restarted
// with back-off when it fails, unless the Pod's restartPolicy is Never, which fails the Pod); a restartable one
// (a sidecar, restartPolicy: Always) only has to start, and keeps running, restarted whenever it exits. Then the
// app containers start together. On deletion the app containers are stopped first and the sidecars after them, in
// reverse order, so a sidecar (a proxy, a log shipper) serves the app until it is gone; when every app container
// has ended for good the sidecars are stopped too, so the Pod can complete (KEP-753).
//
// The lab has no images: an init container that names no command has nothing to run and completes at once; an
// app or sidecar container that names none is answered by the pod server, started when the sequence reaches it.
import { arr, child, isObject, type JsonObject } from '../apiserver/json.js';
import { initContainersOf, isRestartableInitContainer } from '../apiserver/init-containers.js';
import { rfc3339 } from '../apiserver/registry.js';
import type { Container } from '../apiserver/types.js';
import type { PodStatusReport } from '../controllers/pod-lifecycle.js';
import type { ResolvedContainer } from './container-spec.js';
import { podPhase, type ContainerProcess, type RestartPolicy } from './containers.js';

/** Upstream's minimum grace for sidecars whose Pod's grace period the app containers used up (2 s). */
const MIN_SIDECAR_GRACE_MS = 2_000;

export type ContainerRole = 'init' | 'sidecar' | 'app';

/** A container as the Pod declares it and as the lab runs it. */
export interface DeclaredContainer {
  readonly role: ContainerRole;
  readonly spec: JsonObject;
  readonly resolved: ResolvedContainer;
}

interface PodContainer extends DeclaredContainer {
  /** The process that runs it; undefined when it names no command. */
  readonly process?: ContainerProcess;
}

export interface PodContainersOptions {
  /** spec.initContainers then spec.containers. */
  readonly containers: readonly DeclaredContainer[];
  readonly restartPolicy: RestartPolicy;
  /** The process of a container that names a command; `changed` is to be called on each change of its state. */
  readonly process: (c: DeclaredContainer, policy: RestartPolicy, changed: () => void) => ContainerProcess;
  /** When the pod server answers for the containers that name no command (it must be started only once). */
  readonly startServer: () => Promise<void>;
  /** The Pod's status.startTime: when a pod-server container started. */
  readonly startTime: string;
  readonly report: (status: PodStatusReport) => void;
  /** The sequence failed (the pod server did not start): the Pod fails. */
  readonly failed: (error: unknown) => void;
}

/** spec.initContainers (sidecars where restartPolicy is Always) then spec.containers, each resolved by `resolve`. */
export function declaredContainers(
  pod: JsonObject,
  resolve: (container: JsonObject) => ResolvedContainer,
): DeclaredContainer[] {
  const init = initContainersOf(pod).map((spec): DeclaredContainer => {
    const role = isRestartableInitContainer(spec) ? 'sidecar' : 'init';
    return { role, spec, resolved: resolve(spec) };
  });
  const app = arr(child(pod, 'spec'), 'containers')
    .filter(isObject)
    .map((spec): DeclaredContainer => ({ role: 'app', spec, resolved: resolve(spec) }));
  return [...init, ...app];
}

/** App containers first (kubectl logs and top name the first by default), then init containers, each in order. */
export function appFirst(declared: readonly DeclaredContainer[]): DeclaredContainer[] {
  return [...declared.filter((d) => d.role === 'app'), ...declared.filter((d) => d.role !== 'app')];
}

/** Sidecars that name no command (no command, no args): the pod server answers on their ports too. */
export function serverSidecars(pod: unknown): Container[] {
  return initContainersOf(pod)
    .filter((c) => isRestartableInitContainer(c) && arr(c, 'command').length + arr(c, 'args').length === 0)
    .map((c) => c as Container);
}

/** The restart policy the kubelet gives a container of this role in a Pod with this restartPolicy. */
export function containerRestartPolicy(role: ContainerRole, pod: RestartPolicy): RestartPolicy {
  if (role === 'sidecar') return 'Always';
  // A plain init container that succeeded is done whatever the policy; one that failed is retried unless Never.
  if (role === 'init') return pod === 'Never' ? 'Never' : 'OnFailure';
  return pod;
}

export class PodContainers {
  /** Containers the sequence has reached (started, or for a commandless init container, completed). */
  private readonly reached = new Set<PodContainer>();
  private readonly waiters = new Set<() => void>();
  private initialized = false;
  private failure = false;
  private serverUp = false;
  private server: Promise<void> | undefined;
  private sequence: Promise<void> = Promise.resolve();
  private cancelled = false;
  private sidecarsStopped = false;
  /** Upstream's message when the kubelet evicted the Pod (it has failed for good). */
  private evictedFor: string | undefined;
  /** When commandless init containers "ran": the lab has nothing to run for them. */
  private readonly completedAt = rfc3339(Date.now());

  private readonly containers: readonly PodContainer[];

  constructor(private readonly o: PodContainersOptions) {
    this.containers = o.containers.map((c) => {
      if (c.resolved.argv === undefined) return c;
      const policy = containerRestartPolicy(c.role, o.restartPolicy);
      return { ...c, process: o.process(c, policy, () => this.changed()) };
    });
  }

  /** The processes of the containers that name a command, init containers first. */
  get processes(): ContainerProcess[] {
    return this.containers.flatMap((c) => (c.process ? [c.process] : []));
  }

  private of(...roles: ContainerRole[]): PodContainer[] {
    return this.containers.filter((c) => roles.includes(c.role));
  }

  /**
   * Starts the sequence. Without init containers it resolves once the app containers have started (the pod server
   * listening first). With them it resolves at once and the sequence goes on: its reports say how far it got.
   */
  begin(): Promise<void> {
    this.sequence = this.run();
    if (this.of('init', 'sidecar').length === 0) return this.sequence;
    this.sequence.catch((e: unknown) => {
      this.failure = true;
      this.o.failed(e);
      this.changed();
    });
    this.changed();
    return Promise.resolve();
  }

  private async run(): Promise<void> {
    for (const c of this.of('init', 'sidecar')) {
      if (this.cancelled) return;
      this.reached.add(c);
      if (c.role === 'sidecar') {
        // Started is enough for the next one to begin (upstream waits for a startupProbe, which the lab lacks).
        if (c.process) c.process.start();
        else await this.startServer();
        continue;
      }
      if (!c.process) continue;
      c.process.start();
      const exit = await this.until(() => c.process?.finished);
      if (exit === undefined) return;
      if (exit.exitCode !== 0) {
        // Not retried (restartPolicy Never): the Pod has failed, and nothing else of it runs.
        this.failure = true;
        this.changed();
        return this.stopSidecars(MIN_SIDECAR_GRACE_MS);
      }
    }
    this.initialized = true;
    const apps = this.of('app');
    if (apps.some((c) => !c.process)) await this.startServer();
    if (this.cancelled) return;
    for (const c of apps) this.reached.add(c);
    for (const c of apps) c.process?.start();
    this.changed();
  }

  private startServer(): Promise<void> {
    this.server ??= this.o.startServer().then(() => {
      this.serverUp = true;
      this.changed();
    });
    return this.server;
  }

  /** Resolves with `value()` once it is defined (checked on every change), or undefined once cancelled. */
  private until<T>(value: () => T | undefined): Promise<T | undefined> {
    return new Promise((resolve) => {
      const check = (): void => {
        const v = this.cancelled ? undefined : value();
        if (!this.cancelled && v === undefined) return;
        this.waiters.delete(check);
        resolve(v);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** A container changed (its process calls this): the sequence may go on, and the Pod's status is reported. */
  changed(): void {
    for (const w of [...this.waiters]) w();
    if (this.appsEnded() && !this.sidecarsStopped) void this.stopSidecars(MIN_SIDECAR_GRACE_MS);
    this.o.report(this.status());
  }

  /** Every app container runs a command and has ended for good: the sidecars have nothing left to serve. */
  private appsEnded(): boolean {
    const apps = this.of('app');
    return this.initialized && apps.every((c) => c.process?.finished !== undefined);
  }

  private async stopSidecars(graceMs: number): Promise<void> {
    this.sidecarsStopped = true;
    for (const c of this.of('sidecar').reverse()) await c.process?.stop(graceMs);
  }

  /**
   * The Pod is being deleted: no container starts any more; the app containers (and a plain init container still
   * running) get SIGTERM and the grace period; the sidecars after them, last started first stopped.
   */
  async stop(graceMs: number): Promise<void> {
    this.cancelled = true;
    for (const w of [...this.waiters]) w();
    const deadline = Date.now() + graceMs;
    await Promise.all(this.of('init', 'app').map((c) => c.process?.stop(graceMs)));
    // A pod server being started is let finish, so the kubelet's stop finds it and stops it with the Pod.
    await this.sequence.catch(() => undefined);
    await this.stopSidecars(Math.max(MIN_SIDECAR_GRACE_MS, deadline - Date.now()));
  }

  /**
   * The kubelet evicts the Pod (local-storage.ts): it fails at once with the eviction's message, and its containers
   * are killed as on deletion, within `graceMs`; none is started again.
   */
  async evict(message: string, graceMs: number): Promise<void> {
    if (this.evictedFor !== undefined) return;
    this.evictedFor = message;
    this.changed();
    await this.stop(graceMs);
    this.changed();
  }

  status(): PodStatusReport {
    const statuses = (roles: ContainerRole[]): JsonObject[] => this.of(...roles).map((c) => this.statusOf(c));
    const hasInit = this.of('init', 'sidecar').length > 0;
    return {
      phase: this.phase(),
      ...(this.evictedFor !== undefined ? { evicted: { message: this.evictedFor } } : {}),
      containerStatuses: statuses(['app']),
      ...(hasInit
        ? {
            initContainerStatuses: statuses(['init', 'sidecar']),
            initialized: this.initialized,
          }
        : {}),
    };
  }

  private phase(): PodStatusReport['phase'] {
    if (this.failure || this.evictedFor !== undefined) return 'Failed';
    if (!this.initialized) return 'Pending';
    const apps = this.of('app');
    const processes = apps.flatMap((c) => (c.process ? [c.process] : []));
    // A pod server never ends on its own: a Pod it answers for runs until deleted.
    return processes.length === apps.length ? podPhase(processes) : 'Running';
  }

  private statusOf(c: PodContainer): JsonObject {
    const { name, image } = c.resolved;
    const base = { name, image, imageID: '', restartCount: 0, lastState: {} };
    const waiting = {
      ...base,
      ready: false,
      started: false,
      state: { waiting: { reason: 'PodInitializing' } },
    };
    const p = c.process;
    if (p && !p.everStarted) return waiting;
    // A plain init container that completed is reported ready, as the kubelet does.
    if (p && c.role === 'init') return { ...p.status(), ready: p.finished?.exitCode === 0 };
    if (p) return p.status();
    if (c.role === 'init') {
      if (!this.reached.has(c)) return waiting;
      const terminated = {
        exitCode: 0,
        reason: 'Completed',
        startedAt: this.completedAt,
        finishedAt: this.completedAt,
      };
      return { ...base, ready: true, started: false, state: { terminated } };
    }
    if (!this.serverUp) return waiting;
    return { ...base, ready: true, started: true, state: { running: { startedAt: this.o.startTime } } };
  }
}
