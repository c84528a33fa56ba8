// The cluster as the page shows it: one small summary per Node, Pod, Service, EndpointSlice and the kube-proxy
// ConfigMap, kept from the API server's store (every write is delivered to a subscriber before the next one, so
// the view never misses a change). Changes are collected and handed out in batches: creating 1,000 Services is one
// message to the page, not 1,000. Only what the page draws is kept; the page never sees a whole object.
import { arr, child, str, stringMap, type JsonObject } from '../apiserver/json.js';
import type { ObjectStore, StoreEvent } from '../apiserver/store.js';
import { resourceByKind } from '../apiserver/resources.js';
import {
  CONFIGMAP_NAME,
  CONFIGMAP_NAMESPACE,
  configFromConfigMap,
  modeOfConfig,
} from '../cluster/proxy-config.js';
import { parse } from 'yaml';
import type { Node } from 'kube-proxy-ts/api/objects.js';
import { nodeFacts } from 'kube-proxy-ts/model/node-facts.js';
import { endpointConditions } from 'kube-proxy-ts/model/slice-endpoints.js';

export interface NodeSummary {
  readonly kind: 'Node';
  readonly key: string;
  readonly name: string;
  /** The node IPs and pod CIDRs as its proxy reads them (model/node-facts.ts), comma-separated. */
  readonly nodeIPs: string;
  readonly podCIDRs: string;
  readonly zone?: string;
  readonly ready: boolean;
}

export interface PodSummary {
  readonly kind: 'Pod';
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly ip: string;
  readonly phase: string;
  readonly ready: boolean;
  readonly terminating: boolean;
  readonly app?: string;
}

export interface ServicePortSummary {
  readonly name: string;
  readonly port: number;
  readonly protocol: string;
  readonly targetPort: string;
  readonly nodePort?: number;
}

export interface ServiceSummary {
  readonly kind: 'Service';
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly type: string;
  readonly clusterIP: string;
  readonly ports: readonly ServicePortSummary[];
  readonly internalTrafficPolicy: string;
  readonly externalTrafficPolicy?: string;
  readonly trafficDistribution?: string;
}

export interface EndpointSummary {
  readonly address: string;
  readonly pod?: string;
  readonly node?: string;
  readonly zone?: string;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
}

export interface EndpointSliceSummary {
  readonly kind: 'EndpointSlice';
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly service: string;
  readonly ports: readonly { readonly name: string; readonly port: number; readonly protocol: string }[];
  readonly endpoints: readonly EndpointSummary[];
}

export interface ProxyConfigSummary {
  readonly kind: 'ConfigMap';
  readonly key: string;
  /** The mode config.conf asks for, and nftables' (iptables') minSyncPeriod in it. */
  readonly mode: string;
  readonly minSyncPeriod: string;
}

export type ObjectSummary =
  NodeSummary | PodSummary | ServiceSummary | EndpointSliceSummary | ProxyConfigSummary;

export const VIEW_KINDS = ['Node', 'Pod', 'Service', 'EndpointSlice', 'ConfigMap'] as const;

export interface ViewChanges {
  readonly upsert: readonly ObjectSummary[];
  readonly remove: readonly string[];
}

function keyOf(kind: string, meta: JsonObject): string {
  const ns = str(meta, 'namespace');
  return `${kind}/${ns ? `${ns}/` : ''}${str(meta, 'name') ?? ''}`;
}

/** The page's summary of one object; undefined for objects the page does not show. */
export function summarize(kind: string, obj: JsonObject): ObjectSummary | undefined {
  const meta = child(obj, 'metadata');
  const key = keyOf(kind, meta);
  const name = str(meta, 'name') ?? '';
  const namespace = str(meta, 'namespace') ?? '';
  const spec = child(obj, 'spec');
  const status = child(obj, 'status');
  switch (kind) {
    case 'Node': {
      const facts = nodeFacts(obj as unknown as Node);
      const ready = arr(status, 'conditions').some(
        (c) => str(c, 'type') === 'Ready' && str(c, 'status') === 'True',
      );
      return {
        kind,
        key,
        name,
        nodeIPs: facts.ips.join(','),
        podCIDRs: facts.podCIDRs.join(','),
        ...(facts.zone !== undefined ? { zone: facts.zone } : {}),
        ready,
      };
    }
    case 'Pod': {
      const app = stringMap(meta, 'labels').app;
      return {
        kind,
        key,
        namespace,
        name,
        node: str(spec, 'nodeName') ?? '',
        ip: str(status, 'podIP') ?? '',
        phase: str(status, 'phase') ?? 'Pending',
        ready: arr(status, 'conditions').some(
          (c) => str(c, 'type') === 'Ready' && str(c, 'status') === 'True',
        ),
        terminating: str(meta, 'deletionTimestamp') !== undefined,
        ...(app !== undefined ? { app } : {}),
      };
    }
    case 'Service': {
      const type = str(spec, 'type') ?? 'ClusterIP';
      const external = type === 'NodePort' || type === 'LoadBalancer';
      const td = str(spec, 'trafficDistribution');
      return {
        kind,
        key,
        namespace,
        name,
        type,
        clusterIP: str(spec, 'clusterIP') ?? '',
        ports: arr(spec, 'ports').map((p) => {
          const target = (p as JsonObject).targetPort;
          const nodePort = (p as JsonObject).nodePort;
          return {
            name: str(p, 'name') ?? '',
            port: Number((p as JsonObject).port ?? 0),
            protocol: str(p, 'protocol') ?? 'TCP',
            targetPort: target === undefined ? String((p as JsonObject).port ?? '') : String(target),
            ...(typeof nodePort === 'number' ? { nodePort } : {}),
          };
        }),
        internalTrafficPolicy: str(spec, 'internalTrafficPolicy') ?? 'Cluster',
        ...(external ? { externalTrafficPolicy: str(spec, 'externalTrafficPolicy') ?? 'Cluster' } : {}),
        ...(td !== undefined ? { trafficDistribution: td } : {}),
      };
    }
    case 'EndpointSlice': {
      return {
        kind,
        key,
        namespace,
        name,
        service: stringMap(meta, 'labels')['kubernetes.io/service-name'] ?? '',
        ports: arr(obj, 'ports').map((p) => ({
          name: str(p, 'name') ?? '',
          port: Number((p as JsonObject).port ?? 0),
          protocol: str(p, 'protocol') ?? 'TCP',
        })),
        endpoints: arr(obj, 'endpoints').flatMap((e) => {
          // As the proxy reads them (upstream's defaults: a nil serving is serving, whatever ready says).
          const conditions = endpointConditions(child(e, 'conditions'));
          const ref = child(e, 'targetRef');
          const pod = str(ref, 'name');
          const node = str(e, 'nodeName');
          const zone = str(e, 'zone');
          return arr(e, 'addresses').map((a) => ({
            address: String(a),
            ...(pod !== undefined ? { pod } : {}),
            ...(node !== undefined ? { node } : {}),
            ...(zone !== undefined ? { zone } : {}),
            ...conditions,
          }));
        }),
      };
    }
    case 'ConfigMap': {
      if (namespace !== CONFIGMAP_NAMESPACE || name !== CONFIGMAP_NAME) return undefined;
      const text = configFromConfigMap(obj) ?? '';
      const mode = modeOfConfig(text) ?? '?';
      let minSyncPeriod = '?';
      try {
        const doc = parse(text) as unknown;
        minSyncPeriod =
          str(child(doc, mode === 'iptables' ? 'iptables' : 'nftables'), 'minSyncPeriod') ?? '1s';
      } catch {
        // an unreadable config.conf: the proxies will say why; the page shows "?"
      }
      return { kind, key, mode, minSyncPeriod };
    }
    default:
      return undefined;
  }
}

/** The summaries of the store's objects, kept current; `flush()` hands out what changed since the last call. */
export class ClusterView {
  private readonly objects = new Map<string, ObjectSummary>();
  private readonly changed = new Set<string>();
  private readonly unsubscribe: () => void;

  constructor(
    store: ObjectStore,
    private readonly onChange: () => void = () => undefined,
  ) {
    for (const kind of VIEW_KINDS)
      for (const obj of store.list(resourceByKind(kind))) {
        const s = summarize(kind, obj);
        if (s) this.objects.set(s.key, s);
      }
    this.unsubscribe = store.subscribe((ev) => this.apply(ev));
  }

  private apply(ev: StoreEvent): void {
    const kind = ev.resource.names.kind;
    if (!(VIEW_KINDS as readonly string[]).includes(kind)) return;
    const key = keyOf(kind, child(ev.object, 'metadata'));
    const s = ev.type === 'DELETED' ? undefined : summarize(kind, ev.object);
    if (s) this.objects.set(key, s);
    else if (!this.objects.delete(key)) return;
    this.changed.add(key);
    this.onChange();
  }

  snapshot(): ObjectSummary[] {
    return [...this.objects.values()];
  }

  flush(): ViewChanges | undefined {
    if (this.changed.size === 0) return undefined;
    const upsert: ObjectSummary[] = [];
    const remove: string[] = [];
    for (const key of this.changed) {
      const s = this.objects.get(key);
      if (s) upsert.push(s);
      else remove.push(key);
    }
    this.changed.clear();
    return { upsert, remove };
  }

  close(): void {
    this.unsubscribe();
  }
}
