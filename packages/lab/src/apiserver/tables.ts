// Server-side printing: `kubectl get` asks for a meta.k8s.io/v1 Table and prints the cells as given. Columns
// follow upstream's printers for each kind (pkg/printers/internalversion), priority 1 being the `-o wide` ones.
import { arr, child, isObject, num, str, type JsonObject } from './json.js';
import { AUTOSCALING_V1, hpaFromV1 } from './autoscaling.js';
import { EVENTS_V1, eventToCore } from './events.js';
import type { ResourceType } from './resources.js';
import { podColumns } from './pod-columns.js';

interface Column {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'date';
  readonly format?: string;
  readonly description: string;
  readonly priority: number;
  readonly cell: (obj: JsonObject, now: number) => string | number;
}

/** Like upstream's duration.HumanDuration: 45s, 5m20s, 3h, 2d5h, 400d. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 24 * 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

const meta = (o: JsonObject): JsonObject => child(o, 'metadata');
const nameCol: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  priority: 0,
  cell: (o) => str(meta(o), 'name') ?? '',
};
const ageCol: Column = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  priority: 0,
  cell: (o, now) => {
    const t = Date.parse(str(meta(o), 'creationTimestamp') ?? '');
    return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
  },
};
const col = (name: string, cell: Column['cell'], priority = 0, type: Column['type'] = 'string'): Column => ({
  name,
  type,
  description: name,
  priority,
  cell,
});
/** One field of each container in a workload's Pod template, comma-separated (kubectl's Containers, Images). */
const templateContainers = (o: JsonObject, field: 'name' | 'image'): string =>
  arr(child(child(child(o, 'spec'), 'template'), 'spec'), 'containers')
    .map((c) => str(c, field) ?? '')
    .join(',');

const orNone = (s: string): string => (s === '' ? '<none>' : s);

function servicePorts(o: JsonObject): string {
  const ports = arr(child(o, 'spec'), 'ports').map((p) => {
    const np = num(p, 'nodePort');
    return `${String(num(p, 'port') ?? '')}${np ? `:${np}` : ''}/${str(p, 'protocol') ?? 'TCP'}`;
  });
  return orNone(ports.join(','));
}

function externalIP(o: JsonObject): string {
  const spec = child(o, 'spec');
  const type = str(spec, 'type');
  const ext = arr(spec, 'externalIPs').filter((x): x is string => typeof x === 'string');
  if (type === 'ExternalName') return str(spec, 'externalName') ?? '<none>';
  if (type === 'LoadBalancer') {
    const ingress = arr(child(child(o, 'status'), 'loadBalancer'), 'ingress')
      .map((i) => str(i, 'ip') ?? str(i, 'hostname') ?? '')
      .filter((x) => x);
    const all = [...ingress, ...ext];
    return all.length > 0 ? all.join(',') : '<pending>';
  }
  return orNone(ext.join(','));
}

// READY, STATUS and RESTARTS are worked out together, init containers and sidecars included (pod-columns.ts).
const podReady = (o: JsonObject): string => podColumns(o).ready;
const podStatus = (o: JsonObject): string => podColumns(o).status;

/** upstream's RESTARTS cell: the count, and how long ago the last one ended ("3 (5s ago)"). */
function podRestarts(o: JsonObject, now: number): string {
  const { restarts, lastRestart } = podColumns(o);
  return restarts > 0 && lastRestart > 0
    ? `${restarts} (${humanDuration(now - lastRestart)} ago)`
    : String(restarts);
}

function endpointsAddresses(o: JsonObject): string {
  // upstream's formatEndpoints: ports outer, addresses inner.
  const all = arr(o, 'subsets').flatMap((s) => {
    const ports = arr(s, 'ports').map((p) => num(p, 'port'));
    return (ports.length > 0 ? ports : [undefined]).flatMap((p) =>
      arr(s, 'addresses').map((a) => (p === undefined ? (str(a, 'ip') ?? '') : `${str(a, 'ip') ?? ''}:${p}`)),
    );
  });
  if (all.length === 0) return '<none>';
  const shown = all.slice(0, 3).join(',');
  return all.length > 3 ? `${shown} + ${all.length - 3} more...` : shown;
}

function selectorText(m: JsonObject): string {
  return orNone(
    Object.entries(m)
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(','),
  );
}

function nodeStatus(o: JsonObject): string {
  const ready = arr(child(o, 'status'), 'conditions').find((c) => str(c, 'type') === 'Ready');
  const s = str(ready, 'status') === 'True' ? 'Ready' : 'NotReady';
  return child(o, 'spec').unschedulable === true ? `${s},SchedulingDisabled` : s;
}

function nodeRoles(o: JsonObject): string {
  const roles = Object.keys(child(meta(o), 'labels'))
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length))
    .sort();
  return orNone(roles.join(','));
}

function sliceEndpoints(o: JsonObject): string {
  const addrs = arr(o, 'endpoints')
    .flatMap((e) => arr(e, 'addresses'))
    .filter((a): a is string => typeof a === 'string');
  if (addrs.length === 0) return '<unset>';
  const shown = addrs.slice(0, 3).join(',');
  return addrs.length > 3 ? `${shown} + ${addrs.length - 3} more...` : shown;
}

function slicePorts(o: JsonObject): string {
  const ports = arr(o, 'ports').map((p) => String(num(p, 'port') ?? ''));
  return ports.length > 0 ? ports.join(',') : '<unset>';
}

/** An event's time cell: how long ago, or <unknown> without a time (upstream's translateTimestampSince). */
const since = (time: string | undefined, now: number): string => {
  const t = Date.parse(time ?? '');
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
};

/**
 * What kubectl prints of an Event, in either API's shape (upstream prints both from the internal type): the
 * first and last time seen (eventTime for an event written through events.k8s.io/v1, the series' last observation
 * for a repeated one), how often, and the involved object as kind/name.
 */
function eventCells(o: JsonObject, now: number): Record<string, string | number> {
  const e = o.apiVersion === EVENTS_V1 ? eventToCore(o) : o;
  const first = str(e, 'firstTimestamp') ?? str(e, 'eventTime');
  const series = child(e, 'series');
  const last = isObject(e.series) ? str(series, 'lastObservedTime') : (str(e, 'lastTimestamp') ?? first);
  const count = isObject(e.series) ? (num(series, 'count') ?? 1) : num(e, 'count') || 1;
  const involved = child(e, 'involvedObject');
  const kind = (str(involved, 'kind') ?? '').toLowerCase();
  const name = str(involved, 'name') ?? '';
  const source = child(e, 'source');
  const component = str(source, 'component') || (str(e, 'reportingComponent') ?? '');
  const instance = str(source, 'host') || (str(e, 'reportingInstance') ?? '');
  return {
    lastSeen: since(last, now),
    firstSeen: since(first, now),
    type: str(e, 'type') ?? '',
    reason: str(e, 'reason') ?? '',
    object: name ? `${kind}/${name}` : kind,
    subobject: str(involved, 'fieldPath') ?? '',
    source: instance ? `${component}, ${instance}` : component,
    message: (str(e, 'message') ?? '').trim(),
    count,
  };
}

const eventCol = (name: string, field: string, priority = 0): Column =>
  col(name, (o, now) => eventCells(o, now)[field] ?? '', priority);

/** upstream's metav1.FormatLabelSelector: matchLabels as k=v, then expressions ("k in (a,b)", "!k"). */
function labelSelectorText(selector: JsonObject): string {
  const labels = Object.entries(child(selector, 'matchLabels')).map(([k, v]) => `${k}=${String(v)}`);
  const expressions = arr(selector, 'matchExpressions').map((e) => {
    const key = str(e, 'key') ?? '';
    const values = arr(e, 'values').map(String).join(',');
    switch (str(e, 'operator')) {
      case 'In':
        return `${key} in (${values})`;
      case 'NotIn':
        return `${key} notin (${values})`;
      case 'DoesNotExist':
        return `!${key}`;
      default:
        return key;
    }
  });
  return orNone([...labels, ...expressions].join(','));
}

const METRIC_SOURCE_FIELDS: Readonly<Record<string, string>> = {
  Resource: 'resource',
  ContainerResource: 'containerResource',
  Pods: 'pods',
  Object: 'object',
  External: 'external',
};

/** A metric's current value and target as kubectl's formatHPAMetrics prints it ("cpu: 30%/50%"). */
function hpaMetricText(spec: unknown, status: unknown): string {
  const type = str(spec, 'type') ?? '';
  const field = METRIC_SOURCE_FIELDS[type];
  if (field === undefined) return '<unknown type>';
  const source = child(spec, field);
  const target = child(source, 'target');
  const current = child(child(status, field), 'current');
  if (type === 'Pods' || type === 'Object' || type === 'External') {
    const average = str(target, 'averageValue');
    const got = str(current, 'averageValue') ?? str(current, 'value') ?? '<unknown>';
    return `${got}/${average ?? str(target, 'value') ?? ''}${average !== undefined && type !== 'Pods' ? ' (avg)' : ''}`;
  }
  const name = str(source, 'name') ?? '';
  const prefix = type === 'ContainerResource' ? `${name} of ${str(source, 'container') ?? ''}` : name;
  const averageValue = str(target, 'averageValue');
  if (averageValue !== undefined)
    return `${prefix}: ${str(current, 'averageValue') ?? '<unknown>'}/${averageValue}`;
  const now = num(current, 'averageUtilization');
  const want = num(target, 'averageUtilization');
  return `${prefix}: ${now === undefined ? '<unknown>' : `${now}%`}/${want === undefined ? '<auto>' : `${want}%`}`;
}

/** kubectl's TARGETS: the first two metrics, then how many more. */
function hpaTargets(o: JsonObject): string {
  const hpa = o.apiVersion === AUTOSCALING_V1 ? hpaFromV1(o) : o;
  const specs = arr(child(hpa, 'spec'), 'metrics');
  if (specs.length === 0) return '<none>';
  const statuses = arr(child(hpa, 'status'), 'currentMetrics');
  const list = specs.map((m, i) => hpaMetricText(m, statuses[i]));
  return list.length > 2 ? `${list.slice(0, 2).join(', ')} + ${list.length - 2} more...` : list.join(', ');
}

/** A Node's addresses of one type, comma-separated; <none> without one (kubectl's -o wide). */
function nodeAddresses(node: unknown, type: string): string {
  return orNone(
    arr(child(node, 'status'), 'addresses')
      .filter((a) => str(a, 'type') === type)
      .map((a) => str(a, 'address') ?? '')
      .join(','),
  );
}

/** A field of status.nodeInfo, <unknown> when empty (kubectl's -o wide). */
function nodeInfo(node: unknown, field: string): string {
  const value = str(child(child(node, 'status'), 'nodeInfo'), field) ?? '';
  return value === '' ? '<unknown>' : value;
}

const COLUMNS: Readonly<Record<string, readonly Column[]>> = {
  Namespace: [nameCol, col('Status', (o) => str(child(o, 'status'), 'phase') ?? ''), ageCol],
  Node: [
    nameCol,
    col('Status', nodeStatus),
    col('Roles', nodeRoles),
    ageCol,
    col('Version', (o) => str(child(child(o, 'status'), 'nodeInfo'), 'kubeletVersion') ?? ''),
    col('Internal-IP', (o) => nodeAddresses(o, 'InternalIP'), 1),
    col('External-IP', (o) => nodeAddresses(o, 'ExternalIP'), 1),
    col('OS-Image', (o) => nodeInfo(o, 'osImage'), 1),
    col('Kernel-Version', (o) => nodeInfo(o, 'kernelVersion'), 1),
    col('Container-Runtime', (o) => nodeInfo(o, 'containerRuntimeVersion'), 1),
  ],
  Pod: [
    nameCol,
    col('Ready', podReady),
    col('Status', podStatus),
    col('Restarts', podRestarts),
    ageCol,
    col('IP', (o) => orNone(str(child(o, 'status'), 'podIP') ?? ''), 1),
    col('Node', (o) => orNone(str(child(o, 'spec'), 'nodeName') ?? ''), 1),
  ],
  Service: [
    nameCol,
    col('Type', (o) => str(child(o, 'spec'), 'type') ?? ''),
    col('Cluster-IP', (o) => orNone(str(child(o, 'spec'), 'clusterIP') ?? '')),
    col('External-IP', externalIP),
    col('Port(s)', servicePorts),
    ageCol,
    col(
      'Selector',
      (o) =>
        orNone(
          Object.entries(child(child(o, 'spec'), 'selector'))
            .map(([k, v]) => `${k}=${String(v)}`)
            .join(','),
        ),
      1,
    ),
  ],
  EndpointSlice: [
    nameCol,
    col('AddressType', (o) => str(o, 'addressType') ?? ''),
    col('Ports', slicePorts),
    col('Endpoints', sliceEndpoints),
    ageCol,
  ],
  Deployment: [
    nameCol,
    col(
      'Ready',
      (o) => `${num(child(o, 'status'), 'readyReplicas') ?? 0}/${num(child(o, 'spec'), 'replicas') ?? 0}`,
    ),
    col('Up-to-date', (o) => num(child(o, 'status'), 'updatedReplicas') ?? 0, 0, 'integer'),
    col('Available', (o) => num(child(o, 'status'), 'availableReplicas') ?? 0, 0, 'integer'),
    ageCol,
  ],
  ReplicaSet: [
    nameCol,
    col('Desired', (o) => num(child(o, 'spec'), 'replicas') ?? 0, 0, 'integer'),
    col('Current', (o) => num(child(o, 'status'), 'replicas') ?? 0, 0, 'integer'),
    col('Ready', (o) => num(child(o, 'status'), 'readyReplicas') ?? 0, 0, 'integer'),
    ageCol,
    col('Containers', (o) => templateContainers(o, 'name'), 1),
    col('Images', (o) => templateContainers(o, 'image'), 1),
    col('Selector', (o) => labelSelectorText(child(child(o, 'spec'), 'selector')), 1),
  ],
  HorizontalPodAutoscaler: [
    nameCol,
    col('Reference', (o) => {
      const ref = child(child(o, 'spec'), 'scaleTargetRef');
      return `${str(ref, 'kind') ?? ''}/${str(ref, 'name') ?? ''}`;
    }),
    col('Targets', hpaTargets),
    col('MinPods', (o) => {
      const min = num(child(o, 'spec'), 'minReplicas');
      return min === undefined ? '<unset>' : String(min);
    }),
    col('MaxPods', (o) => num(child(o, 'spec'), 'maxReplicas') ?? 0, 0, 'integer'),
    col('Replicas', (o) => num(child(o, 'status'), 'currentReplicas') ?? 0, 0, 'integer'),
    ageCol,
  ],
  DaemonSet: [
    nameCol,
    ...(
      [
        ['Desired', 'desiredNumberScheduled'],
        ['Current', 'currentNumberScheduled'],
        ['Ready', 'numberReady'],
        ['Up-to-date', 'updatedNumberScheduled'],
        ['Available', 'numberAvailable'],
      ] as const
    ).map(([name, field]) => col(name, (o) => num(child(o, 'status'), field) ?? 0, 0, 'integer')),
    col('Node Selector', (o) =>
      selectorText(child(child(child(child(o, 'spec'), 'template'), 'spec'), 'nodeSelector')),
    ),
    ageCol,
    col('Containers', (o) => templateContainers(o, 'name'), 1),
    col('Images', (o) => templateContainers(o, 'image'), 1),
    col('Selector', (o) => selectorText(child(child(child(o, 'spec'), 'selector'), 'matchLabels')), 1),
  ],
  Event: [
    eventCol('Last Seen', 'lastSeen'),
    eventCol('Type', 'type'),
    eventCol('Reason', 'reason'),
    eventCol('Object', 'object'),
    eventCol('Subobject', 'subobject', 1),
    eventCol('Source', 'source', 1),
    eventCol('Message', 'message'),
    eventCol('First Seen', 'firstSeen', 1),
    eventCol('Count', 'count', 1),
    { ...nameCol, priority: 1 },
  ],
  Endpoints: [nameCol, col('Endpoints', endpointsAddresses), ageCol],
  ServiceCIDR: [
    nameCol,
    col('CIDRs', (o) =>
      orNone(
        arr(child(o, 'spec'), 'cidrs')
          .filter((c) => typeof c === 'string')
          .join(','),
      ),
    ),
    ageCol,
  ],
  ConfigMap: [
    nameCol,
    col(
      'Data',
      (o) => Object.keys(child(o, 'data')).length + Object.keys(child(o, 'binaryData')).length,
      0,
      'integer',
    ),
    ageCol,
  ],
};

export type IncludeObject = 'None' | 'Metadata' | 'Object';

function rowObject(o: JsonObject, include: IncludeObject): unknown {
  if (include === 'Object') return o;
  if (include === 'None') return undefined;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: meta(o) };
}

export function renderTable(
  t: ResourceType,
  objects: readonly JsonObject[],
  listMeta: JsonObject,
  now: number,
  include: IncludeObject = 'Metadata',
): JsonObject {
  const columns = COLUMNS[t.names.kind] ?? [nameCol, ageCol];
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description,
      priority: c.priority,
    })),
    rows: objects.map((o) => ({ cells: columns.map((c) => c.cell(o, now)), object: rowObject(o, include) })),
  };
}
