// Which pods may answer for a Service, over time: the soak's ground truth for "wrong endpoint". It follows the
// EndpointSlices as the API server has them (a watch, in the soak's process) and keeps, per Service, each state
// with the time it began: the pods that are ready or serving (a terminating pod still serving may answer), and
// how many are ready. A request answered by pod P between t0 and t1 is right if P was eligible at some moment
// of [t0, t1]; the proxy's lag in programming a change is exactly what turns the other answers wrong.
//
// The soak sees a change when its watch delivers it, which on a busy machine can be a second after the API server
// wrote it, while the proxies (other processes) have it sooner: a pod that turned ready could answer before the
// soak "knew" it was eligible. So a pod's eligibility begins at the slice's last-change-trigger-time (the change
// that caused the write, never later than it) when that is earlier, and ends only when the soak sees it end.
import { ANNOTATION_LAST_CHANGE_TRIGGER_TIME } from 'kube-proxy-ts/api/objects.js';
import { parseRFC3339 } from 'kube-proxy-ts/model/rfc3339.js';

interface State {
  readonly at: number;
  readonly eligible: ReadonlySet<string>;
  readonly ready: number;
}

interface SliceView {
  readonly service: string;
  readonly eligible: readonly string[];
  readonly ready: readonly string[];
  /** endpoints.kubernetes.io/last-change-trigger-time, in ms, when it parses. */
  readonly triggeredAt?: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The Service, and its eligible and ready pods, of one EndpointSlice object; undefined when it is no slice. */
export function sliceView(slice: unknown): SliceView | undefined {
  if (!isRecord(slice) || !isRecord(slice.metadata)) return undefined;
  const labels = isRecord(slice.metadata.labels) ? slice.metadata.labels : {};
  const service = labels['kubernetes.io/service-name'];
  if (typeof service !== 'string') return undefined;
  const eligible: string[] = [];
  const ready: string[] = [];
  for (const e of Array.isArray(slice.endpoints) ? slice.endpoints : []) {
    if (!isRecord(e)) continue;
    const pod = isRecord(e.targetRef) && typeof e.targetRef.name === 'string' ? e.targetRef.name : undefined;
    if (pod === undefined) continue;
    const c = isRecord(e.conditions) ? e.conditions : {};
    // discovery/v1: ready nil means ready; serving nil means "as ready".
    const isReady = c.ready !== false;
    const isServing = c.serving === undefined ? isReady : c.serving === true;
    if (isReady || isServing) eligible.push(pod);
    if (isReady && c.terminating !== true) ready.push(pod);
  }
  const annotations = isRecord(slice.metadata.annotations) ? slice.metadata.annotations : {};
  const triggeredAt = parseRFC3339(annotations[ANNOTATION_LAST_CHANGE_TRIGGER_TIME]);
  return { service, eligible, ready, ...(triggeredAt !== undefined ? { triggeredAt } : {}) };
}

export class EligibilityTimeline {
  private readonly slices = new Map<string, SliceView>();
  private readonly states = new Map<string, State[]>();

  /** One watch event on an EndpointSlice, at time `at` (ms). */
  observe(type: string, slice: unknown, at: number): void {
    if (!isRecord(slice) || !isRecord(slice.metadata)) return;
    const key = `${String(slice.metadata.namespace)}/${String(slice.metadata.name)}`;
    const before = this.slices.get(key);
    const view = type === 'DELETED' ? undefined : sliceView(slice);
    if (view) this.slices.set(key, view);
    else this.slices.delete(key);
    for (const service of new Set([before?.service, view?.service]))
      if (service !== undefined)
        this.record(service, at, view?.service === service ? view.triggeredAt : undefined);
  }

  private record(service: string, at: number, triggeredAt: number | undefined): void {
    const eligible = new Set<string>();
    const ready = new Set<string>();
    for (const v of this.slices.values()) {
      if (v.service !== service) continue;
      for (const p of v.eligible) eligible.add(p);
      for (const p of v.ready) ready.add(p);
    }
    const list = this.states.get(service) ?? [];
    const previous = list.at(-1);
    const added = [...eligible].filter((p) => !previous?.eligible.has(p));
    // Pods that became eligible did so at the trigger time, if earlier (and after the last state); whoever left
    // stays eligible until now.
    if (previous !== undefined && added.length > 0 && triggeredAt !== undefined && triggeredAt < at)
      list.push({
        at: Math.max(previous.at, triggeredAt),
        eligible: new Set([...previous.eligible, ...added]),
        ready: previous.ready,
      });
    list.push({ at, eligible, ready: ready.size });
    this.states.set(service, list);
  }

  /**
   * The watch lost its place and lists again: the slices it knows are forgotten (the list re-adds those that
   * still exist); the history stays, and each Service's last state holds until the list arrives.
   */
  reset(): void {
    this.slices.clear();
  }

  /** Whether `pod` could answer for `service` at some moment of [t0, t1]. */
  eligibleDuring(service: string, pod: string, t0: number, t1: number): boolean {
    const list = this.states.get(service) ?? [];
    for (let i = list.length - 1; i >= 0; i--) {
      const s = list[i];
      if (s === undefined) continue;
      if (s.at <= t1 && s.eligible.has(pod)) return true;
      if (s.at <= t0) return false;
    }
    return false;
  }

  /** How long before t0 `pod` stopped being eligible for `service` (ms); undefined if it never was. */
  ineligibleFor(service: string, pod: string, t0: number): number | undefined {
    const list = this.states.get(service) ?? [];
    let since: number | undefined;
    for (const s of list) {
      if (s.at > t0) break;
      if (s.eligible.has(pod)) since = undefined;
      else if (since === undefined) since = s.at;
    }
    const ever = list.some((s) => s.at <= t0 && s.eligible.has(pod));
    return ever && since !== undefined ? t0 - since : undefined;
  }

  /** Whether `service` had at least one ready endpoint all through [from, to]. */
  alwaysReady(service: string, from: number, to: number): boolean {
    const list = this.states.get(service) ?? [];
    let current: State | undefined;
    for (const s of list) {
      if (s.at <= from) current = s;
      else if (s.at <= to) {
        if (current === undefined || current.ready === 0) return false;
        current = s;
      }
    }
    return current !== undefined && current.ready > 0;
  }

  /** How long after `t` `pod` next became eligible for `service` (ms); undefined if it did not. */
  eligibleAfter(service: string, pod: string, t: number): number | undefined {
    const s = (this.states.get(service) ?? []).find((x) => x.at > t && x.eligible.has(pod));
    return s === undefined ? undefined : s.at - t;
  }

  /** The pods eligible for `service` now. */
  eligibleNow(service: string): ReadonlySet<string> {
    const list = this.states.get(service) ?? [];
    return list[list.length - 1]?.eligible ?? new Set();
  }
}
