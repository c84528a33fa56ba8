// The resource types this API server serves: where each lives in the URL space, what discovery says about it,
// which name rule it follows and which fields a field selector may use.

// path-segment: any name usable in a URL path segment (RBAC objects, e.g. "system:node-proxier").
export type NameRule = 'dns1123-label' | 'dns1035-label' | 'dns1123-subdomain' | 'path-segment';

/** What a type is called, in the order a CRD's spec.names gives it (its plural is the type's `resource`). */
export interface ResourceNames {
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly kind: string;
  readonly listKind: string;
  readonly categories: readonly string[];
}

export interface ResourceType {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly names: ResourceNames;
  readonly namespaced: boolean;
  readonly nameRule: NameRule;
  readonly subresources: readonly ('status' | 'scale')[];
  readonly fieldSelectors: readonly string[];
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] as const;
export const RESOURCE_VERBS: readonly string[] = VERBS;

const META_FIELDS = ['metadata.name', 'metadata.namespace'];

/** A type in the table's terms: its names flat, list kind, categories and field selectors filled in. */
interface ResourceEntry extends Omit<ResourceType, 'names' | 'fieldSelectors'> {
  readonly singular: string;
  readonly kind: string;
  readonly shortNames: readonly string[];
  readonly categories?: readonly string[];
  readonly fields?: readonly string[];
}

function resource(entry: ResourceEntry): ResourceType {
  const { singular, kind, shortNames, categories = [], fields = [], ...rest } = entry;
  return {
    ...rest,
    names: { singular, shortNames, kind, listKind: `${kind}List`, categories },
    fieldSelectors: [...META_FIELDS, ...fields],
  };
}

/**
 * Events in one of their two APIs: the same objects, with the API's own name for the object an event is about
 * (core/v1 involvedObject, events.k8s.io regarding) and for who reported it, in the field selectors.
 */
function eventResource(group: '' | 'events.k8s.io', about: string, reporter: string): ResourceType {
  const aboutFields = ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'];
  return resource({
    group,
    version: 'v1',
    resource: 'events',
    singular: 'event',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    nameRule: 'dns1123-subdomain',
    subresources: [],
    fields: [...aboutFields.map((f) => `${about}.${f}`), 'reason', reporter, 'type'],
  });
}

/** The HorizontalPodAutoscaler in one of the autoscaling versions the lab serves: one stored object. */
function hpaResource(version: 'v1' | 'v2'): ResourceType {
  return resource({
    group: 'autoscaling',
    version,
    resource: 'horizontalpodautoscalers',
    singular: 'horizontalpodautoscaler',
    kind: 'HorizontalPodAutoscaler',
    namespaced: true,
    shortNames: ['hpa'],
    categories: ['all'],
    nameRule: 'dns1123-subdomain',
    subresources: ['status'],
  });
}

/** A workload of apps/v1: namespaced, in category `all`, its singular the kind in lower case. */
function appsWorkload(
  plural: string,
  kind: string,
  shortName: string,
  subresources: ResourceType['subresources'],
): ResourceType {
  return resource({
    group: 'apps',
    version: 'v1',
    resource: plural,
    singular: kind.toLowerCase(),
    kind,
    namespaced: true,
    shortNames: [shortName],
    categories: ['all'],
    nameRule: 'dns1123-subdomain',
    subresources,
  });
}

export const RESOURCES: readonly ResourceType[] = [
  resource({
    group: '',
    version: 'v1',
    resource: 'namespaces',
    singular: 'namespace',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    nameRule: 'dns1123-label',
    subresources: ['status'],
    fields: ['status.phase'],
  }),
  resource({
    group: '',
    version: 'v1',
    resource: 'nodes',
    singular: 'node',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    nameRule: 'dns1123-subdomain',
    subresources: ['status'],
    fields: ['spec.unschedulable'],
  }),
  resource({
    group: '',
    version: 'v1',
    resource: 'pods',
    singular: 'pod',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    nameRule: 'dns1123-subdomain',
    subresources: ['status'],
    fields: ['spec.nodeName', 'status.phase', 'status.podIP', 'spec.restartPolicy', 'spec.schedulerName'],
  }),
  resource({
    group: '',
    version: 'v1',
    resource: 'services',
    singular: 'service',
    kind: 'Service',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    nameRule: 'dns1035-label',
    subresources: ['status'],
    fields: ['spec.clusterIP', 'spec.type'],
  }),
  resource({
    group: '',
    version: 'v1',
    resource: 'configmaps',
    singular: 'configmap',
    kind: 'ConfigMap',
    namespaced: true,
    shortNames: ['cm'],
    nameRule: 'dns1123-subdomain',
    subresources: [],
  }),
  resource({
    group: '',
    version: 'v1',
    resource: 'endpoints',
    singular: 'endpoints',
    kind: 'Endpoints',
    namespaced: true,
    shortNames: ['ep'],
    nameRule: 'dns1123-subdomain',
    subresources: [],
  }),
  resource({
    group: 'discovery.k8s.io',
    version: 'v1',
    resource: 'endpointslices',
    singular: 'endpointslice',
    kind: 'EndpointSlice',
    namespaced: true,
    shortNames: [],
    nameRule: 'dns1123-subdomain',
    subresources: [],
    fields: ['addressType'],
  }),
  // The ranges ClusterIPs are allocated from (networking.k8s.io/v1 since 1.33): apiserver/service-cidr.ts.
  resource({
    group: 'networking.k8s.io',
    version: 'v1',
    resource: 'servicecidrs',
    singular: 'servicecidr',
    kind: 'ServiceCIDR',
    namespaced: false,
    shortNames: [],
    nameRule: 'dns1123-subdomain',
    subresources: ['status'],
  }),
  appsWorkload('deployments', 'Deployment', 'deploy', ['status', 'scale']),
  // A Deployment's revisions: the Deployment controller scales them, the ReplicaSet controller owns their Pods.
  appsWorkload('replicasets', 'ReplicaSet', 'rs', ['status', 'scale']),
  // Stored as given, with no controller and no kind-specific validation: enough for manifests that carry them
  // (kubectl apply of deploy/, the kube-proxy DaemonSet and its RBAC) to be accepted.
  appsWorkload('daemonsets', 'DaemonSet', 'ds', ['status']),
  // HorizontalPodAutoscalers, stored in autoscaling/v2's shape and served through v1 as well (apiserver/autoscaling.ts
  // converts, as kube-apiserver does); v2 comes first, so discovery prefers it, as upstream's does.
  hpaResource('v2'),
  hpaResource('v1'),
  // Events, served as kube-apiserver serves them: one stored object (core/v1's shape) seen through two APIs,
  // events.k8s.io/v1 renaming fields (regarding, note, reportingController, deprecated*; apiserver/events.ts).
  // The field selectors are upstream's (pkg/registry/core/event/strategy.go, and the events.k8s.io names that
  // convert to them); kubectl describe asks for involvedObject.{name,namespace,kind,uid}.
  eventResource('', 'involvedObject', 'reportingComponent'),
  eventResource('events.k8s.io', 'regarding', 'reportingController'),
  // metrics.k8s.io, as metrics-server serves it: the lab fills these from /proc (cluster/usage.ts) through an
  // extra route; without one (a bare API server) lists are empty and `kubectl top` says metrics are not ready.
  resource({
    group: 'metrics.k8s.io',
    version: 'v1beta1',
    resource: 'nodes',
    singular: '',
    kind: 'NodeMetrics',
    namespaced: false,
    shortNames: [],
    nameRule: 'dns1123-subdomain',
    subresources: [],
  }),
  resource({
    group: 'metrics.k8s.io',
    version: 'v1beta1',
    resource: 'pods',
    singular: '',
    kind: 'PodMetrics',
    namespaced: true,
    shortNames: [],
    nameRule: 'dns1123-subdomain',
    subresources: [],
  }),
  resource({
    group: '',
    version: 'v1',
    resource: 'serviceaccounts',
    singular: 'serviceaccount',
    kind: 'ServiceAccount',
    namespaced: true,
    shortNames: ['sa'],
    nameRule: 'dns1123-subdomain',
    subresources: [],
  }),
  resource({
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    resource: 'clusterroles',
    singular: 'clusterrole',
    kind: 'ClusterRole',
    namespaced: false,
    shortNames: [],
    nameRule: 'path-segment',
    subresources: [],
  }),
  resource({
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    resource: 'clusterrolebindings',
    singular: 'clusterrolebinding',
    kind: 'ClusterRoleBinding',
    namespaced: false,
    shortNames: [],
    nameRule: 'path-segment',
    subresources: [],
  }),
];

export const apiVersionOf = (t: ResourceType): string => (t.group ? `${t.group}/${t.version}` : t.version);

export function findResource(group: string, version: string, name: string): ResourceType | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.resource === name);
}

export function resourceByKind(kind: string): ResourceType {
  const r = RESOURCES.find((x) => x.names.kind === kind);
  if (!r) throw new Error(`no resource for kind ${kind}`);
  return r;
}

/** The group versions served, in discovery order. */
export function groupVersions(): { group: string; version: string }[] {
  const seen = new Map<string, { group: string; version: string }>();
  for (const r of RESOURCES) seen.set(`${r.group}/${r.version}`, { group: r.group, version: r.version });
  return [...seen.values()];
}
