// The EndpointSlice controller: for every Service with a selector, the Pods it selects become endpoints in one
// or more slices (at most maxEndpointsPerSlice each, grouped by their resolved ports). Reconciling keeps
// endpoints in the slice they are already in and writes only slices whose content changed, so an unchanged
// Service never churns its slices; every written slice carries the time of the newest change that caused it.
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import {
  ANNOTATION_LAST_CHANGE_TRIGGER_TIME,
  LABEL_HEADLESS,
  LABEL_SERVICE_NAME,
  LABEL_TOPOLOGY_ZONE,
} from 'kube-proxy-ts/api/objects.js';
import { arr, child, isObject, jsonEqual, num, str, stringMap, type JsonObject } from '../apiserver/json.js';
import type { Registry } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';
import { initContainersOf, isRestartableInitContainer } from '../apiserver/init-containers.js';
import { matchesMap } from '../apiserver/selectors.js';
import type { EventRecorder } from './events.js';
import { isPodReady } from './pods.js';
import {
  autoZoneHints,
  hintPolicy,
  MESSAGES,
  REASON_HINTS_DISABLED,
  REASON_HINTS_ENABLED,
  withAddressType,
  zoneShares,
  type TrafficDistribution,
} from './topology-hints.js';
import { WorkQueue } from './work-queue.js';

export const LABEL_MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
export const CONTROLLER_NAME = 'endpointslice-controller.k8s.io';

const POD = resourceByKind('Pod');
const NODE = resourceByKind('Node');
const SERVICE = resourceByKind('Service');
const SLICE = resourceByKind('EndpointSlice');
const meta = (o: unknown): JsonObject => child(o, 'metadata');
const nsOf = (o: unknown): string => str(meta(o), 'namespace') ?? '';
const nameOf = (o: unknown): string => str(meta(o), 'name') ?? '';

/** Go's time.RFC3339Nano as upstream writes the trigger time: fractional seconds without trailing zeros. */
export function rfc3339Nano(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/\.?0+Z$/, 'Z')
    .replace(/\.Z$/, 'Z');
}

interface SlicePort {
  readonly name: string;
  readonly protocol: string;
  readonly port: number;
  readonly appProtocol?: string;
}

type Endpoint = JsonObject;

export interface EndpointSliceControllerOptions {
  readonly registry: Registry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly maxEndpointsPerSlice: number;
  /** Where topology-mode Auto says why hints were given or removed (upstream's endpoint-slice-controller events). */
  readonly events?: EventRecorder;
}

const SAFE = 'bcdfghjklmnpqrstvwxz2456789';
const suffix = (): string =>
  Array.from({ length: 5 }, () => SAFE[Math.floor(Math.random() * SAFE.length)]).join('');

/**
 * The Service port's target on this Pod: a number, or a named port (undefined if the Pod lacks it). A name is looked
 * up in the app containers, then in the restartable (sidecar) init containers, which serve beside them: upstream's
 * podutil.FindPort. A plain init container has ended before the Pod is ready, so its ports never serve.
 */
export function resolvePort(pod: JsonObject, target: unknown, protocol: string): number | undefined {
  if (typeof target === 'number') return target;
  if (typeof target !== 'string') return undefined;
  const serving = [
    ...arr(child(pod, 'spec'), 'containers'),
    ...initContainersOf(pod).filter(isRestartableInitContainer),
  ];
  for (const c of serving)
    for (const p of arr(c, 'ports'))
      if (str(p, 'name') === target && (str(p, 'protocol') ?? 'TCP') === protocol)
        return num(p, 'containerPort');
  return undefined;
}

/** The address types of a Service's slices: its ipFamilies (IPv4 when it names none), at most one of each. */
function serviceAddressTypes(spec: JsonObject): string[] {
  const families = arr(spec, 'ipFamilies').filter((f): f is string => f === 'IPv4' || f === 'IPv6');
  const unique = [...new Set(families)];
  return unique.length > 0 ? unique : ['IPv4'];
}

function portsKey(ports: readonly SlicePort[]): string {
  return JSON.stringify(
    [...ports]
      .map((p) => [p.name, p.protocol, p.port, p.appProtocol ?? ''])
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
  );
}

function slicePorts(slice: JsonObject): SlicePort[] {
  return arr(slice, 'ports').map((p) => ({
    name: str(p, 'name') ?? '',
    protocol: str(p, 'protocol') ?? 'TCP',
    port: num(p, 'port') ?? 0,
    ...(str(p, 'appProtocol') ? { appProtocol: str(p, 'appProtocol') } : {}),
  }));
}

/**
 * trafficDistribution: PreferClose (and PreferSameZone) hint each endpoint to its own zone, PreferSameNode also to
 * its node; only when every endpoint has a zone, else no endpoint gets hints (upstream's rule).
 */
function applyTrafficDistributionHints(dist: TrafficDistribution, all: Endpoint[]): void {
  if (!all.every((e) => typeof e.zone === 'string')) return;
  for (const e of all) {
    e.hints = {
      forZones: [{ name: e.zone }],
      ...(dist === 'PreferSameNode' && typeof e.nodeName === 'string'
        ? { forNodes: [{ name: e.nodeName }] }
        : {}),
    };
  }
}

/** What of a Node weighs in topology-mode Auto's zone shares besides its labels: allocatable CPU and readiness. */
const nodeWeight = (node: unknown): string =>
  JSON.stringify([
    str(child(child(node, 'status'), 'allocatable'), 'cpu'),
    arr(child(node, 'status'), 'conditions').find((c) => str(c, 'type') === 'Ready'),
  ]);

export class EndpointSliceController {
  readonly queue: WorkQueue;
  private readonly unsubscribe: () => void;
  /** Per Service (namespace/name): the time of the newest change not yet written to its slices. */
  private readonly triggerTimes = new Map<string, number>();
  /**
   * Per Service with topology-mode Auto: "enabled", or the reason hints were last refused. An event is written when
   * this changes (upstream writes one every sync, which its recorder folds into a count).
   */
  private readonly autoHintStates = new Map<string, string>();

  constructor(private readonly o: EndpointSliceControllerOptions) {
    this.queue = new WorkQueue('endpointslices', (k) => this.reconcile(k), o.logger);
    this.unsubscribe = o.registry.store.subscribe((ev) => {
      const now = o.clock.now();
      switch (ev.resource.names.kind) {
        case 'Service':
          this.touch(`${nsOf(ev.object)}/${nameOf(ev.object)}`, now);
          break;
        case 'Pod':
          for (const svc of o.registry.store.list(SERVICE, nsOf(ev.object))) {
            const selector = stringMap(child(svc, 'spec'), 'selector');
            if (Object.keys(selector).length === 0) continue;
            const labels = stringMap(meta(ev.object), 'labels');
            const oldLabels = stringMap(meta(ev.old), 'labels');
            if (matchesMap(selector, labels) || (ev.old && matchesMap(selector, oldLabels)))
              this.touch(`${nsOf(svc)}/${nameOf(svc)}`, now);
          }
          break;
        case 'Node': {
          // Zones come from Node labels; a relabelled Node can change every Service's hints. Allocatable CPU and
          // readiness only weigh in topology-mode Auto's shares.
          const relabelled =
            ev.type !== 'MODIFIED' ||
            !jsonEqual(child(meta(ev.object), 'labels'), child(meta(ev.old), 'labels'));
          const reweighed = relabelled || nodeWeight(ev.object) !== nodeWeight(ev.old);
          if (reweighed)
            for (const svc of o.registry.store.list(SERVICE))
              if (relabelled || hintPolicy(svc).kind === 'auto')
                this.queue.add(`${nsOf(svc)}/${nameOf(svc)}`);
          break;
        }
        case 'EndpointSlice': {
          // Someone else changed or removed one of our slices: put it back as it should be.
          const svcName = stringMap(meta(ev.object), 'labels')[LABEL_SERVICE_NAME];
          if (svcName && stringMap(meta(ev.object), 'labels')[LABEL_MANAGED_BY] === CONTROLLER_NAME)
            this.queue.add(`${nsOf(ev.object)}/${svcName}`);
          break;
        }
      }
    });
    for (const svc of o.registry.store.list(SERVICE)) this.queue.add(`${nsOf(svc)}/${nameOf(svc)}`);
  }

  private touch(key: string, now: number): void {
    this.triggerTimes.set(key, Math.max(now, this.triggerTimes.get(key) ?? 0));
    this.queue.add(key);
  }

  private reconcile(key: string): void {
    const [ns = '', name = ''] = key.split('/');
    const reg = this.o.registry;
    const svc = reg.store.get(SERVICE, ns, name);
    const existing = reg.store.list(SLICE, ns).filter((s) => {
      const l = stringMap(meta(s), 'labels');
      return l[LABEL_SERVICE_NAME] === name && l[LABEL_MANAGED_BY] === CONTROLLER_NAME;
    });
    if (!svc) {
      for (const s of existing) reg.delete(SLICE, ns, nameOf(s));
      this.triggerTimes.delete(key);
      this.autoHintStates.delete(key);
      return;
    }
    const spec = child(svc, 'spec');
    const selector = stringMap(spec, 'selector');
    // Services without a selector get no slices from this controller (their owner writes them), as upstream.
    if (Object.keys(selector).length === 0 || str(spec, 'type') === 'ExternalName') return;
    const trigger = this.triggerTimes.get(key);
    this.triggerTimes.delete(key);
    // One set of slices per family of the Service (upstream's reconciler, by address type): a dual-stack
    // Service's IPv6 slices hold its Pods' IPv6 addresses. Slices of a family it no longer has go.
    const families = serviceAddressTypes(spec);
    for (const s of existing)
      if (!families.includes(str(s, 'addressType') ?? '')) reg.delete(SLICE, ns, nameOf(s));
    for (const family of families) {
      const desired = this.desiredEndpoints(svc, selector, family);
      this.applyHints(key, svc, family, desired);
      const mine = existing.filter((s) => str(s, 'addressType') === family);
      this.sync(svc, family, mine, desired, trigger);
    }
  }

  /** Endpoints grouped by their resolved ports (portsKey → ports and endpoints by address). */
  private desiredEndpoints(
    svc: JsonObject,
    selector: Record<string, string>,
    family: string,
  ): Map<string, { ports: SlicePort[]; endpoints: Map<string, Endpoint> }> {
    const reg = this.o.registry;
    const spec = child(svc, 'spec');
    const publishNotReady = spec.publishNotReadyAddresses === true;
    const zones = new Map<string, string | undefined>();
    const zoneOf = (node: string): string | undefined => {
      if (!zones.has(node))
        zones.set(node, stringMap(meta(reg.store.get(NODE, '', node)), 'labels')[LABEL_TOPOLOGY_ZONE]);
      return zones.get(node);
    };
    const groups = new Map<string, { ports: SlicePort[]; endpoints: Map<string, Endpoint> }>();
    const pods = reg.store
      .list(POD, nsOf(svc))
      .filter((p) => matchesMap(selector, stringMap(meta(p), 'labels')));
    for (const pod of pods) {
      const status = child(pod, 'status');
      const phase = str(status, 'phase');
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      const ips = arr(status, 'podIPs').map((x) => str(x, 'ip'));
      const ip = [str(status, 'podIP'), ...ips].find((a) => a && a.includes(':') === (family === 'IPv6'));
      if (!ip) continue;
      const ports: SlicePort[] = [];
      for (const sp of arr(spec, 'ports')) {
        const protocol = str(sp, 'protocol') ?? 'TCP';
        const port = resolvePort(pod, isObject(sp) ? (sp.targetPort ?? sp.port) : undefined, protocol);
        if (port === undefined) continue;
        ports.push({
          name: str(sp, 'name') ?? '',
          protocol,
          port,
          ...(str(sp, 'appProtocol') ? { appProtocol: str(sp, 'appProtocol') } : {}),
        });
      }
      const terminating = str(meta(pod), 'deletionTimestamp') !== undefined;
      const podReady = isPodReady(pod);
      const nodeName = str(child(pod, 'spec'), 'nodeName');
      const zone = nodeName ? zoneOf(nodeName) : undefined;
      const endpoint: Endpoint = {
        addresses: [ip],
        conditions: {
          ready: publishNotReady || (podReady && !terminating),
          serving: publishNotReady || podReady,
          terminating,
        },
        ...(nodeName ? { nodeName } : {}),
        ...(zone ? { zone } : {}),
        targetRef: { kind: 'Pod', namespace: nsOf(pod), name: nameOf(pod), uid: str(meta(pod), 'uid') },
      };
      const k = portsKey(ports);
      let g = groups.get(k);
      if (!g) {
        g = { ports, endpoints: new Map() };
        groups.set(k, g);
      }
      g.endpoints.set(ip, endpoint);
    }
    return groups;
  }

  /** The hints the Service asks for (hintPolicy decides between the annotation and trafficDistribution). */
  private applyHints(
    key: string,
    svc: JsonObject,
    family: string,
    groups: Map<string, { endpoints: Map<string, Endpoint> }>,
  ): void {
    const all = [...groups.values()].flatMap((g) => [...g.endpoints.values()]);
    const policy = hintPolicy(svc);
    if (policy.kind === 'trafficDistribution') applyTrafficDistributionHints(policy.value, all);
    const outcome = policy.kind === 'auto' ? this.applyAutoHints(all) : undefined;
    this.reportAutoHints(key, svc, family, outcome);
  }

  /** topology-mode Auto: zones from the Nodes' CPU shares; "enabled", or why no endpoint got a hint. */
  private applyAutoHints(all: Endpoint[]): string {
    // By address, so an unchanged Service lends the same endpoints to the same zones on every reconcile.
    const ordered = [...all].sort((a, b) =>
      String(arr(a, 'addresses')[0]).localeCompare(String(arr(b, 'addresses')[0])),
    );
    const result = autoZoneHints(
      ordered.map((e) => ({
        ready: child(e, 'conditions').ready === true,
        ...(typeof e.zone === 'string' ? { zone: e.zone } : {}),
      })),
      zoneShares(this.o.registry.store.list(NODE)),
    );
    if (!result.ok) return result.message;
    ordered.forEach((e, i) => {
      const zone = result.zones[i];
      if (zone) e.hints = { forZones: [{ name: zone }] };
    });
    return 'enabled';
  }

  /** An event when topology-mode Auto's outcome for a Service changes (undefined: the Service no longer asks). */
  private reportAutoHints(key: string, svc: JsonObject, family: string, outcome: string | undefined): void {
    const before = this.autoHintStates.get(key);
    if (outcome === before) return;
    if (outcome === undefined) this.autoHintStates.delete(key);
    else this.autoHintStates.set(key, outcome);
    // Turning the annotation off is news only if hints were given (upstream: HasPopulatedHints).
    if (outcome === undefined && before !== 'enabled') return;
    const enabled = outcome === 'enabled';
    this.o.events?.event(svc, {
      type: enabled ? 'Normal' : 'Warning',
      reason: enabled ? REASON_HINTS_ENABLED : REASON_HINTS_DISABLED,
      message: withAddressType(enabled ? MESSAGES.enabled : (outcome ?? MESSAGES.disabled), family),
    });
  }

  private sliceLabels(svc: JsonObject): Record<string, string> {
    const labels: Record<string, string> = { ...stringMap(meta(svc), 'labels') };
    labels[LABEL_SERVICE_NAME] = nameOf(svc);
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME;
    if (str(child(svc, 'spec'), 'clusterIP') === 'None') labels[LABEL_HEADLESS] = '';
    else delete labels[LABEL_HEADLESS];
    return labels;
  }

  private sync(
    svc: JsonObject,
    family: string,
    existing: JsonObject[],
    desired: Map<string, { ports: SlicePort[]; endpoints: Map<string, Endpoint> }>,
    trigger: number | undefined,
  ): void {
    const reg = this.o.registry;
    const ns = nsOf(svc);
    const max = this.o.maxEndpointsPerSlice;
    const labels = this.sliceLabels(svc);
    const ownerReferences = [
      {
        apiVersion: 'v1',
        kind: 'Service',
        name: nameOf(svc),
        uid: str(meta(svc), 'uid'),
        controller: true,
        blockOwnerDeletion: true,
      },
    ];
    const triggerText = rfc3339Nano(trigger ?? this.o.clock.now());
    // A Service with no endpoints keeps one empty placeholder slice, so consumers see "no endpoints" rather than
    // "not synced yet".
    if (desired.size === 0) desired.set(portsKey([]), { ports: [], endpoints: new Map() });

    const plans: { slice?: JsonObject; ports: SlicePort[]; endpoints: Endpoint[] }[] = [];
    const toDelete: JsonObject[] = [];
    const byKey = new Map<string, JsonObject[]>();
    for (const s of [...existing].sort((a, b) => nameOf(a).localeCompare(nameOf(b)))) {
      const k = portsKey(slicePorts(s));
      if (str(s, 'addressType') !== family || !desired.has(k)) {
        toDelete.push(s);
        continue;
      }
      byKey.set(k, [...(byKey.get(k) ?? []), s]);
    }
    for (const [k, group] of desired) {
      const remaining = new Map(group.endpoints);
      const mine: { slice?: JsonObject; ports: SlicePort[]; endpoints: Endpoint[] }[] = [];
      // Endpoints already in a slice stay there (with their new state).
      for (const s of byKey.get(k) ?? []) {
        const eps: Endpoint[] = [];
        for (const e of arr(s, 'endpoints')) {
          const addr = arr(e, 'addresses')[0];
          const want = typeof addr === 'string' ? remaining.get(addr) : undefined;
          if (want && eps.length < max) {
            eps.push(want);
            remaining.delete(addr as string);
          }
        }
        mine.push({ slice: s, ports: group.ports, endpoints: eps });
      }
      // New endpoints fill slices that change anyway, then any with room, then new slices.
      const changing = (p: (typeof mine)[number]): boolean =>
        !jsonEqual(p.endpoints, arr(p.slice, 'endpoints'));
      const order = [...mine.filter(changing), ...mine.filter((p) => !changing(p))];
      const left = [...remaining.values()];
      for (const p of order)
        while (left.length > 0 && p.endpoints.length < max) p.endpoints.push(left.shift() as Endpoint);
      while (left.length > 0) mine.push({ ports: group.ports, endpoints: left.splice(0, max) });
      if (mine.length === 0) mine.push({ ports: group.ports, endpoints: [] });
      // Keep one (possibly empty) slice for an empty group; drop the other emptied ones.
      const nonEmpty = mine.filter((p) => p.endpoints.length > 0);
      const keep = nonEmpty.length > 0 ? nonEmpty : mine.slice(0, 1);
      for (const p of mine) if (!keep.includes(p) && p.slice) toDelete.push(p.slice);
      plans.push(...keep);
    }

    for (const p of plans) {
      const ports = p.ports.map((x) => ({ ...x }));
      if (p.slice) {
        const s = p.slice;
        const same =
          jsonEqual(arr(s, 'endpoints'), p.endpoints) &&
          jsonEqual(slicePorts(s), p.ports) &&
          jsonEqual(stringMap(meta(s), 'labels'), labels) &&
          jsonEqual(arr(meta(s), 'ownerReferences'), ownerReferences);
        if (same) continue;
        const next: JsonObject = {
          ...s,
          metadata: {
            ...meta(s),
            labels,
            ownerReferences,
            annotations: {
              ...stringMap(meta(s), 'annotations'),
              [ANNOTATION_LAST_CHANGE_TRIGGER_TIME]: triggerText,
            },
          },
          endpoints: p.endpoints,
          ports,
        };
        const r = reg.update(SLICE, ns, nameOf(s), next);
        if (!r.ok)
          this.o.logger.warn('cannot update endpointslice', {
            slice: `${ns}/${nameOf(s)}`,
            error: r.error.message,
          });
      } else {
        const base = nameOf(svc).slice(0, 57);
        const slice = {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: {
            name: `${base}-${suffix()}`,
            namespace: ns,
            labels,
            annotations: { [ANNOTATION_LAST_CHANGE_TRIGGER_TIME]: triggerText },
            ownerReferences,
          },
          addressType: family,
          endpoints: p.endpoints,
          ports,
        };
        const r = reg.create(SLICE, ns, slice);
        if (!r.ok)
          this.o.logger.warn('cannot create endpointslice', {
            service: `${ns}/${nameOf(svc)}`,
            error: r.error.message,
          });
      }
    }
    for (const s of toDelete) reg.delete(SLICE, ns, nameOf(s));
  }

  stop(): void {
    this.unsubscribe();
    this.queue.stop();
  }
}
