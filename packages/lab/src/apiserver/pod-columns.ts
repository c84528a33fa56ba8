// kubectl's READY, STATUS and RESTARTS of a Pod, worked out together as upstream's printPod does
// (pkg/printers/internalversion/printers.go): the init containers first, in order, up to the first one not done
// (Init:N/M, Init:<reason>); a restartable (sidecar) init container counts as a container once started, its
// readiness in READY and its restarts in RESTARTS; then, once initialized, the app containers from the last to the
// first (so the first one's reason wins).
import { arr, child, isObject, num, str, type JsonObject } from './json.js';
import { sidecarNames } from './init-containers.js';

export interface PodColumns {
  /** READY: "ready/total", sidecars counted as containers. */
  readonly ready: string;
  /** STATUS: the phase, or what a container waits for or ended with. */
  readonly status: string;
  readonly restarts: number;
  /** When the last counted restart ended (ms since the epoch; 0: none known), for "3 (5s ago)". */
  readonly lastRestart: number;
}

const state = (c: unknown, which: 'waiting' | 'terminated' | 'running'): JsonObject | undefined => {
  const s = child(c, 'state')[which];
  return isObject(s) ? s : undefined;
};
const lastFinished = (c: unknown): number => {
  const t = Date.parse(str(child(child(c, 'lastState'), 'terminated'), 'finishedAt') ?? '');
  return Number.isNaN(t) ? 0 : t;
};
const conditionTrue = (pod: JsonObject, type: string): boolean =>
  arr(child(pod, 'status'), 'conditions').some((c) => str(c, 'type') === type && str(c, 'status') === 'True');

/** A terminated state's reason, or else its signal or exit code, as printPod words it. */
function terminatedReason(t: JsonObject): string {
  const reason = str(t, 'reason');
  if (reason) return reason;
  const signal = num(t, 'signal');
  return signal ? `Signal:${signal}` : `ExitCode:${num(t, 'exitCode') ?? 0}`;
}

interface Tally {
  ready: number;
  restarts: number;
  lastRestart: number;
}

/** The init containers' part: the Init:… reason while initializing (undefined once done) and the sidecars' tally. */
function initPart(pod: JsonObject, all: Tally, sidecarsOnly: Tally): string | undefined {
  const sidecars = sidecarNames(pod);
  const count = arr(child(pod, 'spec'), 'initContainers').length;
  const statuses = arr(child(pod, 'status'), 'initContainerStatuses');
  for (const [i, c] of statuses.entries()) {
    const restarts = num(c, 'restartCount') ?? 0;
    all.restarts += restarts;
    all.lastRestart = Math.max(all.lastRestart, lastFinished(c));
    const sidecar = sidecars.has(str(c, 'name') ?? '');
    if (sidecar) {
      sidecarsOnly.restarts += restarts;
      sidecarsOnly.lastRestart = Math.max(sidecarsOnly.lastRestart, lastFinished(c));
    }
    const terminated = state(c, 'terminated');
    if (terminated && (num(terminated, 'exitCode') ?? 0) === 0) continue;
    if (sidecar && isObject(c) && c.started === true) {
      if (c.ready === true) all.ready++;
      continue;
    }
    if (terminated) return `Init:${terminatedReason(terminated)}`;
    const waiting = str(state(c, 'waiting'), 'reason');
    if (waiting && waiting !== 'PodInitializing') return `Init:${waiting}`;
    return `Init:${i}/${count}`;
  }
  return undefined;
}

export function podColumns(pod: JsonObject): PodColumns {
  const status = child(pod, 'status');
  const phase = str(status, 'phase') ?? '';
  const total = arr(child(pod, 'spec'), 'containers').length + sidecarNames(pod).size;
  let reason = str(status, 'reason') || phase || 'Unknown';
  const all: Tally = { ready: 0, restarts: 0, lastRestart: 0 };
  const sidecars: Tally = { ready: 0, restarts: 0, lastRestart: 0 };
  const initializing = initPart(pod, all, sidecars);
  if (initializing !== undefined) reason = initializing;
  let { restarts, lastRestart } = all;
  if (initializing === undefined || conditionTrue(pod, 'Initialized')) {
    ({ restarts, lastRestart } = sidecars);
    let hasRunning = false;
    for (const c of [...arr(status, 'containerStatuses')].reverse()) {
      restarts += num(c, 'restartCount') ?? 0;
      lastRestart = Math.max(lastRestart, lastFinished(c));
      const waiting = str(state(c, 'waiting'), 'reason');
      const terminated = state(c, 'terminated');
      if (waiting) reason = waiting;
      else if (terminated) reason = terminatedReason(terminated);
      else if (isObject(c) && c.ready === true && state(c, 'running')) {
        hasRunning = true;
        all.ready++;
      }
    }
    // A container that completed beside one still running: the pod as a whole is running (or not ready).
    if (reason === 'Completed' && hasRunning) reason = conditionTrue(pod, 'Ready') ? 'Running' : 'NotReady';
  }
  if (str(child(pod, 'metadata'), 'deletionTimestamp') && phase !== 'Succeeded' && phase !== 'Failed')
    reason = 'Terminating';
  return { ready: `${all.ready}/${total}`, status: reason, restarts, lastRestart };
}
