// The plug that decides when a Pod is running and when it is gone. The default makes Pods ready at once; the
// lab backs each Pod with a network namespace and resolves start() when its servers listen.
import type { JsonObject } from '../apiserver/json.js';
import type { Pod } from '../apiserver/types.js';

/** What a kubelet reports about a running Pod's containers after start(): kubectl's restarts, states, phase. */
export interface PodStatusReport {
  /**
   * Pod phase: Pending while init containers run; Running while a container runs or will be restarted;
   * Succeeded/Failed once all have ended (Failed too when an init container failed and will not be restarted).
   */
  readonly phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  /** status.containerStatuses, as upstream shapes them (state, lastState, restartCount, ready, started). */
  readonly containerStatuses: readonly JsonObject[];
  /** status.initContainerStatuses, in spec order; absent when the Pod has no init containers. */
  readonly initContainerStatuses?: readonly JsonObject[];
  /**
   * Every init container has completed, or (a sidecar) started: the Initialized condition. Absent: true (a Pod
   * without init containers is initialized at once).
   */
  readonly initialized?: boolean;
  /**
   * The kubelet evicted the Pod (an ephemeral-storage limit exceeded): status.reason Evicted with this message,
   * and an Evicted event, as upstream's eviction manager writes them.
   */
  readonly evicted?: { readonly message: string };
}

export interface PodLifecycle {
  /**
   * Starts the Pod (it already has spec.nodeName and status.podIP); resolves when it is ready. A plug that runs
   * processes calls `report` whenever a container's state changes (exits, restarts, back-off).
   */
  start(pod: Pod, report?: (status: PodStatusReport) => void): Promise<void>;
  /**
   * Stops the Pod after its deletion was requested; resolves when it is gone. The Pod stays terminating until
   * then, or until its grace period ends, whichever comes first.
   */
  stop(pod: Pod): Promise<void>;
}

export interface ReadyPodLifecycleOptions {
  /** Keep deleted Pods terminating this long (ms, on the real clock) before reporting them gone; default 0. */
  readonly terminationDelayMs?: number;
}

/** Pods are ready as soon as they start and gone as soon as they are stopped (after an optional delay). */
export function readyPodLifecycle(options: ReadyPodLifecycleOptions = {}): PodLifecycle {
  const delay = options.terminationDelayMs ?? 0;
  return {
    start: () => Promise.resolve(),
    stop: () => (delay > 0 ? new Promise((resolve) => setTimeout(resolve, delay)) : Promise.resolve()),
  };
}

/** Pods never exit on their own: deleted Pods stay terminating for their whole grace period. */
export const lingeringPodLifecycle: PodLifecycle = {
  start: () => Promise.resolve(),
  stop: () => new Promise<void>(() => undefined),
};

/** One container of a Pod the kubelet runs, as the API server's pods/log (and exec) reach it. */
export interface KubeletContainer {
  readonly name: string;
  readonly restartCount: number;
  /** The network namespace its processes run in. */
  readonly netns: string;
  /** The log of its current run, or of the run before (`--previous`); undefined when there is none. */
  logFile(previous: boolean): string | undefined;
}

/** What the API server asks of the kubelet beyond a Pod's lifecycle: its containers, for logs and exec. */
export interface Kubelet {
  /** undefined: this kubelet does not run the Pod (not started yet, or gone). */
  containers(namespace: string, pod: string): readonly KubeletContainer[] | undefined;
}

/** One exec or attach stream, as the kubelet sees it: kubectl's stdin in, the process's output out. */
export interface StreamSession {
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
  /** Bytes the client typed; null once it closed its stdin. */
  onStdin(fn: (data: Buffer | null) => void): void;
  /** The client's terminal size (kubectl sends it first, then on every change). */
  onResize(fn: (size: { readonly width: number; readonly height: number }) => void): void;
  /** The client went away. */
  onClose(fn: () => void): void;
  writeStdout(data: Buffer): void;
  writeStderr(data: Buffer): void;
  /** Ends the stream with the command's exit code, or with why it could not run. */
  finish(result: { readonly exitCode: number } | { readonly error: string }): void;
}

/** The streaming half of a kubelet (the lab's runs commands in network namespaces). */
export interface StreamingKubelet {
  exec(namespace: string, pod: string, container: string, command: readonly string[], s: StreamSession): void;
  attach(namespace: string, pod: string, container: string, s: StreamSession): void;
}
