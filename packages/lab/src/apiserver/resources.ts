// The resource types this API server serves: where each lives in the URL space, what discovery says about it,
// which name rule it follows and which fields a field selector may use.

// path-segment: any name usable in a URL path segment (RBAC objects, e.g. "system:node-proxier").
export type NameRule = 'dns1123-label' | 'dns1035-label' | 'dns1123-subdomain' | 'path-segment';

export interface ResourceType {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly singular: string;
  readonly kind: string;
  readonly listKind: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly nameRule: NameRule;
  readonly subresources: readonly ('status' | 'scale')[];
  readonly fieldSelectors: readonly string[];
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] as const;
export const RESOURCE_VERBS: readonly string[] = VERBS;

const META_FIELDS = ['metadata.name', 'metadata.namespace'];

function resource(
  r: Omit<ResourceType, 'listKind' | 'categories' | 'fieldSelectors'> & {
    categories?: readonly string[];
    fields?: readonly string[];
  },
): ResourceType {
  return {
    ...r,
    listKind: `${r.kind}List`,
    categories: r.categories ?? [],
    fieldSelectors: [...META_FIELDS, ...(r.fields ?? [])],
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
  resource({
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    singular: 'deployment',
    kind: 'Deployment',
    namespaced: true,
    shortNames: ['deploy'],
    categories: ['all'],
    nameRule: 'dns1123-subdomain',
    subresources: ['status', 'scale'],
  }),
  // A Deployment's revisions: the Deployment controller scales them, the ReplicaSet controller owns their Pods.
  resource({
    group: 'apps',
    version: 'v1',
    resource: 'replicasets',
    singular: 'replicaset',
    kind: 'ReplicaSet',
    namespaced: true,
    shortNames: ['rs'],
    categories: ['all'],
    nameRule: 'dns1123-subdomain',
    subresources: ['status', 'scale'],
  }),
  // Stored as given, with no controller and no kind-specific validation: enough for manifests that carry them
  // (kubectl apply of deploy/, the kube-proxy DaemonSet and its RBAC) to be accepted.
  resource({
    group: 'apps',
    version: 'v1',
    resource: 'daemonsets',
    singular: 'daemonset',
    kind: 'DaemonSet',
    namespaced: true,
    shortNames: ['ds'],
    categories: ['all'],
    nameRule: 'dns1123-subdomain',
    subresources: ['status'],
  }),
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
  const r = RESOURCES.find((x) => x.kind === kind);
  if (!r) throw new Error(`no resource for kind ${kind}`);
  return r;
}

/** The group versions served, in discovery order. */
export function groupVersions(): { group: string; version: string }[] {
  const seen = new Map<string, { group: string; version: string }>();
  for (const r of RESOURCES) seen.set(`${r.group}/${r.version}`, { group: r.group, version: r.version });
  return [...seen.values()];
}
