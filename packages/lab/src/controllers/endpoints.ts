// Endpoints (core/v1), mirrored from each Service's EndpointSlices, for `kubectl get endpoints` and the tools
// that still read them. Upstream's endpoints controller computes them from the Pods; here the slices are the one
// source, so the two can never disagree: every slice's ports make one subset, ready endpoints go to addresses and
// the others to notReadyAddresses (upstream's publishNotReadyAddresses aside). Endpoints are single family, as
// upstream's controller makes them: a dual-stack Service's hold its primary family's addresses only (its first
// ipFamilies entry), the other family's are in its slices alone. A Service without slices (no selector) keeps
// whatever Endpoints someone wrote by hand.
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { LABEL_SERVICE_NAME } from 'kube-proxy-ts/api/objects.js';
import { arr, child, isObject, jsonEqual, num, str, type JsonObject } from '../apiserver/json.js';
import type { Registry } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';
import { CONTROLLER_NAME, LABEL_MANAGED_BY } from './endpointslice.js';
import { WorkQueue } from './work-queue.js';

const SERVICE = resourceByKind('Service');
const SLICE = resourceByKind('EndpointSlice');
const ENDPOINTS = resourceByKind('Endpoints');
const meta = (o: unknown): JsonObject => child(o, 'metadata');
/** Marks Endpoints this controller wrote (upstream marks mirrored ones with endpointslice's managed-by). */
export const ENDPOINTS_MANAGED_BY = 'endpoints.kubernetes.io/managed-by';
const MANAGER = 'lab-endpoints-mirror';

/** The subsets for a Service's slices: one per distinct port list, addresses sorted as upstream sorts them. */
export function subsetsFromSlices(slices: readonly JsonObject[]): JsonObject[] {
  const bySignature = new Map<string, { ports: JsonObject[]; ready: JsonObject[]; notReady: JsonObject[] }>();
  for (const s of slices) {
    if (str(s, 'addressType') !== 'IPv4' && str(s, 'addressType') !== 'IPv6') continue;
    const ports = arr(s, 'ports')
      .filter(isObject)
      .map((p) => ({
        ...(str(p, 'name') ? { name: str(p, 'name') } : {}),
        port: num(p, 'port') ?? 0,
        protocol: str(p, 'protocol') ?? 'TCP',
      }));
    const key = JSON.stringify(ports);
    const group = bySignature.get(key) ?? { ports, ready: [], notReady: [] };
    bySignature.set(key, group);
    for (const e of arr(s, 'endpoints')) {
      const ready = child(e, 'conditions').ready !== false;
      for (const ip of arr(e, 'addresses')) {
        if (typeof ip !== 'string') continue;
        const address: JsonObject = {
          ip,
          ...(str(e, 'nodeName') ? { nodeName: str(e, 'nodeName') } : {}),
          ...(Object.keys(child(e, 'targetRef')).length > 0 ? { targetRef: child(e, 'targetRef') } : {}),
        };
        (ready ? group.ready : group.notReady).push(address);
      }
    }
  }
  const byIP = (a: JsonObject, b: JsonObject): number =>
    (str(a, 'ip') ?? '').localeCompare(str(b, 'ip') ?? '');
  return [...bySignature.values()]
    .filter((g) => g.ready.length + g.notReady.length > 0)
    .map((g) => ({
      ...(g.ready.length > 0 ? { addresses: g.ready.sort(byIP) } : {}),
      ...(g.notReady.length > 0 ? { notReadyAddresses: g.notReady.sort(byIP) } : {}),
      ports: g.ports,
    }));
}

/**
 * The family of a Service's Endpoints: its first ipFamilies entry, else its ClusterIP's; undefined when it names
 * neither (then every slice counts).
 */
export function primaryFamily(svc: JsonObject): 'IPv4' | 'IPv6' | undefined {
  const spec = child(svc, 'spec');
  const first = arr(spec, 'ipFamilies')[0];
  if (first === 'IPv4' || first === 'IPv6') return first;
  const ip = str(spec, 'clusterIP') ?? '';
  if (ip === '' || ip === 'None') return undefined;
  return ip.includes(':') ? 'IPv6' : 'IPv4';
}

export class EndpointsController {
  readonly queue: WorkQueue;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly registry: Registry,
    logger: Logger,
  ) {
    this.queue = new WorkQueue('endpoints', (k) => this.reconcile(k), logger);
    this.unsubscribe = registry.store.subscribe((ev) => {
      const m = meta(ev.object);
      if (ev.resource.names.kind === 'Service')
        this.queue.add(`${str(m, 'namespace') ?? ''}/${str(m, 'name') ?? ''}`);
      else if (ev.resource.names.kind === 'EndpointSlice') {
        const svc = str(child(m, 'labels'), LABEL_SERVICE_NAME);
        if (svc) this.queue.add(`${str(m, 'namespace') ?? ''}/${svc}`);
      }
    });
    for (const s of registry.store.list(SERVICE))
      this.queue.add(`${str(meta(s), 'namespace') ?? ''}/${str(meta(s), 'name') ?? ''}`);
  }

  private reconcile(key: string): void {
    const [ns = '', name = ''] = key.split('/');
    const reg = this.registry;
    const svc = reg.store.get(SERVICE, ns, name);
    const current = reg.store.get(ENDPOINTS, ns, name);
    const ours = current !== undefined && child(meta(current), 'labels')[ENDPOINTS_MANAGED_BY] === MANAGER;
    const selector = child(child(svc, 'spec'), 'selector');
    if (!svc || str(meta(svc), 'deletionTimestamp') || Object.keys(selector).length === 0) {
      if (current && ours) reg.delete(ENDPOINTS, ns, name);
      return;
    }
    if (current && !ours) return;
    const family = primaryFamily(svc);
    const slices = reg.store
      .list(SLICE, ns)
      .filter(
        (s) =>
          child(meta(s), 'labels')[LABEL_SERVICE_NAME] === name &&
          child(meta(s), 'labels')[LABEL_MANAGED_BY] === CONTROLLER_NAME &&
          (family === undefined || str(s, 'addressType') === family),
      );
    const subsets = subsetsFromSlices(slices);
    const labels = { ...child(meta(svc), 'labels'), [ENDPOINTS_MANAGED_BY]: MANAGER };
    if (current) {
      if (jsonEqual(arr(current, 'subsets'), subsets) && jsonEqual(child(meta(current), 'labels'), labels))
        return;
      const r = reg.update(ENDPOINTS, ns, name, {
        ...current,
        metadata: { ...meta(current), labels },
        subsets,
      });
      if (!r.ok) this.queue.add(key);
      return;
    }
    reg.create(ENDPOINTS, ns, {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name, namespace: ns, labels },
      subsets,
    });
  }

  stop(): void {
    this.unsubscribe();
    this.queue.stop();
  }
}
