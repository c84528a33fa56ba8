// The soak's churn: API writes at a steady rate, each one a change a cluster sees every day.
//   - readiness flips on the flappy pods: Ready=False written to the Pod's status, as the kubelet writes it when a
//     readiness probe fails, and back to True half a second or more later; never more than one pod of a
//     Deployment out at once;
//   - graceful churn on soak-steady, at most one pod operation every two seconds (a pod start is the expensive
//     part of the lab): delete a pod (it terminates with its grace period, still serving), scale 4 → 6 and back,
//     and a rollout restart (the annotation `kubectl rollout restart` writes).
// Each change is recorded with its time and kind, for the report and the picture.
import type { LabApi } from './lab-client.js';
import { SOAK_NAMESPACE, STEADY, STEADY_MAX_REPLICAS, STEADY_REPLICAS } from './workload.js';

export const CHURN_KINDS = [
  'unready',
  'ready',
  'delete',
  'scale-up',
  'scale-down',
  'rollout-restart',
] as const;
export type ChurnChange = (typeof CHURN_KINDS)[number];

export interface ChurnRecord {
  readonly t: number;
  readonly change: ChurnChange;
  readonly target: string;
  /** The API's refusal, when the write failed (the soak goes on). */
  readonly error?: string;
}

/** What the churn needs to know of a pod (kept current by the soak's pod watch). */
export interface PodState {
  readonly name: string;
  readonly app: string;
  readonly ready: boolean;
  readonly terminating: boolean;
  /** status.podIP, once it has one. */
  readonly ip?: string;
  /** spec.nodeName, once scheduled. */
  readonly node?: string;
}

const POD_OPERATIONS: readonly ChurnChange[] = [
  'delete',
  'scale-up',
  'delete',
  'scale-down',
  'rollout-restart',
];
const POD_OPERATION_GAP_MS = 2000;
const UNREADY_AT_LEAST_MS = 500;

function readyConditions(ready: boolean, now: string): object[] {
  return ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
    type,
    status: ready || type === 'PodScheduled' || type === 'Initialized' ? 'True' : 'False',
    lastTransitionTime: now,
  }));
}

export class Churn {
  readonly records: ChurnRecord[] = [];
  private steadyReplicas = STEADY_REPLICAS;
  private lastPodOperation = 0;
  private podOperations = 0;
  private flips = 0;
  /** Pods this churn set unready, and when. */
  readonly flipped = new Map<string, number>();

  constructor(
    private readonly api: LabApi,
    private readonly pods: () => readonly PodState[],
    private readonly flappyApps: readonly string[],
  ) {}

  /** One change: a pod operation when one is due and soak-steady has settled, else a readiness flip. */
  async step(now = Date.now()): Promise<void> {
    if (now - this.lastPodOperation >= POD_OPERATION_GAP_MS && this.steadySettled()) {
      this.lastPodOperation = now;
      const op = POD_OPERATIONS[this.podOperations++ % POD_OPERATIONS.length] ?? 'delete';
      return this.podOperation(op, now);
    }
    return this.flip(now);
  }

  private steadySettled(): boolean {
    const ready = this.pods().filter((p) => p.app === STEADY && p.ready && !p.terminating).length;
    return ready >= this.steadyReplicas;
  }

  private async write(
    change: ChurnChange,
    target: string,
    t: number,
    send: () => Promise<unknown>,
  ): Promise<void> {
    try {
      await send();
      this.records.push({ t, change, target });
    } catch (e) {
      this.records.push({ t, change, target, error: e instanceof Error ? e.message : String(e) });
    }
  }

  private async podOperation(op: ChurnChange, t: number): Promise<void> {
    const deploymentPath = `/apis/apps/v1/namespaces/${SOAK_NAMESPACE}/deployments/${STEADY}`;
    const merge = 'application/merge-patch+json';
    switch (op) {
      case 'delete': {
        const victim = this.pods().find((p) => p.app === STEADY && p.ready && !p.terminating);
        if (!victim) return this.flip(t);
        return this.write(op, victim.name, t, () =>
          this.api.request('DELETE', `/api/v1/namespaces/${SOAK_NAMESPACE}/pods/${victim.name}`),
        );
      }
      case 'scale-up':
      case 'scale-down': {
        const replicas = op === 'scale-up' ? STEADY_MAX_REPLICAS : STEADY_REPLICAS;
        this.steadyReplicas = replicas;
        return this.write(op, `${STEADY}=${replicas}`, t, () =>
          this.api.request('PATCH', deploymentPath, { spec: { replicas } }, merge),
        );
      }
      default:
        return this.write(op, STEADY, t, () =>
          this.api.request(
            'PATCH',
            deploymentPath,
            {
              spec: {
                template: {
                  metadata: {
                    annotations: { 'kubectl.kubernetes.io/restartedAt': new Date(t).toISOString() },
                  },
                },
              },
            },
            merge,
          ),
        );
    }
  }

  /**
   * One readiness flip: alternately a pod set unready (in a Deployment with every pod ready, so none ever has two
   * out) and a flipped pod set ready again (after a second or more); when one kind is not possible, the other,
   * so that every step is a change.
   */
  private async flip(t: number): Promise<void> {
    const pods = this.pods();
    for (const [name] of this.flipped) if (!pods.some((p) => p.name === name)) this.flipped.delete(name);
    const flipped = [...this.flipped].sort((a, b) => a[1] - b[1]);
    const due = flipped.find(([, at]) => t - at >= UNREADY_AT_LEAST_MS);
    // A Deployment none of whose pods this churn has set unready (its own record, not the pod watch's, which
    // lags behind the writes on a busy API server), with a pod the watch shows ready.
    const appOf = new Map(pods.map((p) => [p.name, p.app]));
    const outApps = new Set([...this.flipped.keys()].map((name) => appOf.get(name)));
    const candidates = this.flappyApps.filter(
      (app) => !outApps.has(app) && pods.some((p) => p.app === app && p.ready && !p.terminating),
    );
    const app = candidates[this.flips % Math.max(1, candidates.length)];
    const victims = pods.filter(
      (p) => p.app === app && p.ready && !p.terminating && !this.flipped.has(p.name),
    );
    const victim = victims[this.flips % Math.max(1, victims.length)];
    const turn = this.flips++ % 2;
    if (due && (turn === 1 || !victim)) return this.setReady(due[0], true, t);
    if (victim) return this.setReady(victim.name, false, t);
    const oldest = flipped[0];
    if (oldest) return this.setReady(oldest[0], true, t);
  }

  private async setReady(pod: string, ready: boolean, t: number): Promise<void> {
    if (ready) this.flipped.delete(pod);
    else this.flipped.set(pod, t);
    return this.write(ready ? 'ready' : 'unready', pod, t, () =>
      this.api.request(
        'PATCH',
        `/api/v1/namespaces/${SOAK_NAMESPACE}/pods/${pod}/status`,
        { status: { conditions: readyConditions(ready, new Date(t).toISOString()) } },
        'application/merge-patch+json',
      ),
    );
  }

  /** Every pod this churn left unready, ready again (the end of the run). */
  async restore(): Promise<void> {
    for (const pod of [...this.flipped.keys()]) await this.setReady(pod, true, Date.now());
  }
}
