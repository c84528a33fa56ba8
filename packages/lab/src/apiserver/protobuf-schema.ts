// The messages the lab decodes from Kubernetes' protobuf encoding, as data: for each message, field number → JSON
// name, value type and shape. Field numbers come from upstream's generated.proto files (k8s.io/api core/v1, apps/v1,
// discovery/v1, rbac/v1, autoscaling/v1 and v2; k8s.io/apimachinery meta/v1, intstr, resource); a kind is added by
// describing its messages here and naming it in OBJECT_SCHEMAS. Fields not described are skipped by the decoder,
// so a message needs only what the lab's validation, defaulting and controllers read (and what a user would expect
// to find again in `kubectl get -o yaml`).

export type ScalarType = 'string' | 'bytes' | 'bool' | 'int32' | 'int64';

export interface MessageSchema {
  readonly name: string;
  readonly fields: ReadonlyMap<number, FieldSchema>;
  /** For messages JSON writes as one value (IntOrString, Quantity, Time): the decoded fields → that value. */
  readonly toJson?: (decoded: Readonly<Record<string, unknown>>) => unknown;
}

export type ValueType = ScalarType | MessageSchema;

export interface FieldSchema {
  readonly json: string;
  readonly type: ValueType;
  /**
   * single: one value; repeated: a JSON array; map: a JSON object of map entries (key 1, value 2); inline: a
   * message whose fields JSON writes into the parent (Go's embedded structs, e.g. Probe's ProbeHandler).
   */
  readonly shape: 'single' | 'repeated' | 'map' | 'inline';
  /**
   * The generated marshaller writes every non-pointer scalar, zero or not, where JSON leaves zero values out; so a
   * zero is dropped unless the Go field is a pointer, whose zero (replicas: 0, ready: false) was set on purpose.
   */
  readonly keepZero: boolean;
  /** For maps: the entry message (key 1, value 2). */
  readonly entry?: MessageSchema;
}

type Flag = 'repeated' | 'map' | 'inline' | 'pointer';
type FieldDef = readonly [json: string, type: ValueType, ...flags: Flag[]];

function message(
  name: string,
  defs: Readonly<Record<number, FieldDef>>,
  toJson?: MessageSchema['toJson'],
): MessageSchema {
  const fields = new Map<number, FieldSchema>();
  for (const [num, [json, type, ...flags]] of Object.entries(defs)) {
    const shape = (['repeated', 'map', 'inline'] as const).find((s) => flags.includes(s)) ?? 'single';
    // Map entries keep zero keys and values: a label may have an empty value.
    const entry =
      shape === 'map'
        ? message(`${name}.${json}Entry`, { 1: ['key', 'string', 'pointer'], 2: ['value', type, 'pointer'] })
        : undefined;
    fields.set(Number(num), { json, type, shape, keepZero: flags.includes('pointer'), entry });
  }
  return toJson ? { name, fields, toJson } : { name, fields };
}

// --- k8s.io/apimachinery: values JSON writes as a single string or number ---

/** intstr.IntOrString: type 0 is intVal, type 1 is strVal. */
const IntOrString = message(
  'IntOrString',
  { 1: ['type', 'int64'], 2: ['intVal', 'int32'], 3: ['strVal', 'string'] },
  (o) => (o.type === 1 ? (o.strVal ?? '') : (o.intVal ?? 0)),
);

const Quantity = message('Quantity', { 1: ['string', 'string'] }, (o) => o.string ?? '');

// Go's zero time.Time, which older marshallers wrote instead of nothing.
const GO_ZERO_TIME_SECONDS = -62135596800;

/**
 * meta/v1 Time: seconds and nanos since the epoch. JSON has RFC 3339 to the second, and null for the zero time (Go's
 * encoder writes a template's unset creationTimestamp as null, and the JSON path stores that null too).
 */
const Time = message('Time', { 1: ['seconds', 'int64'], 2: ['nanos', 'int32'] }, (o) => {
  const seconds = typeof o.seconds === 'number' ? o.seconds : 0;
  if (seconds === 0 || seconds === GO_ZERO_TIME_SECONDS) return null;
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
});

// --- meta/v1 ---

const OwnerReference = message('OwnerReference', {
  1: ['kind', 'string'],
  3: ['name', 'string'],
  4: ['uid', 'string'],
  5: ['apiVersion', 'string'],
  6: ['controller', 'bool', 'pointer'],
  7: ['blockOwnerDeletion', 'bool', 'pointer'],
});

const ObjectMeta = message('ObjectMeta', {
  1: ['name', 'string'],
  2: ['generateName', 'string'],
  3: ['namespace', 'string'],
  5: ['uid', 'string'],
  6: ['resourceVersion', 'string'],
  7: ['generation', 'int64'],
  8: ['creationTimestamp', Time],
  9: ['deletionTimestamp', Time],
  10: ['deletionGracePeriodSeconds', 'int64', 'pointer'],
  11: ['labels', 'string', 'map'],
  12: ['annotations', 'string', 'map'],
  13: ['ownerReferences', OwnerReference, 'repeated'],
  14: ['finalizers', 'string', 'repeated'],
});

const LabelSelectorRequirement = message('LabelSelectorRequirement', {
  1: ['key', 'string'],
  2: ['operator', 'string'],
  3: ['values', 'string', 'repeated'],
});

const LabelSelector = message('LabelSelector', {
  1: ['matchLabels', 'string', 'map'],
  2: ['matchExpressions', LabelSelectorRequirement, 'repeated'],
});

// --- core/v1: references and the pieces of a container ---

const ObjectReference = message('ObjectReference', {
  1: ['kind', 'string'],
  2: ['namespace', 'string'],
  3: ['name', 'string'],
  4: ['uid', 'string'],
  5: ['apiVersion', 'string'],
  6: ['resourceVersion', 'string'],
  7: ['fieldPath', 'string'],
});

const LocalObjectReference = message('LocalObjectReference', { 1: ['name', 'string'] });

/** ConfigMapKeySelector and SecretKeySelector have the same shape. */
const KeySelector = message('KeySelector', {
  1: ['', LocalObjectReference, 'inline'],
  2: ['key', 'string'],
  3: ['optional', 'bool', 'pointer'],
});

const EnvVarSource = message('EnvVarSource', {
  1: [
    'fieldRef',
    message('ObjectFieldSelector', { 1: ['apiVersion', 'string'], 2: ['fieldPath', 'string'] }),
  ],
  2: [
    'resourceFieldRef',
    message('ResourceFieldSelector', {
      1: ['containerName', 'string'],
      2: ['resource', 'string'],
      3: ['divisor', Quantity],
    }),
  ],
  3: ['configMapKeyRef', KeySelector],
  4: ['secretKeyRef', KeySelector],
});

const EnvVar = message('EnvVar', {
  1: ['name', 'string'],
  2: ['value', 'string'],
  3: ['valueFrom', EnvVarSource],
});

/** ConfigMapEnvSource and SecretEnvSource have the same shape. */
const EnvSource = message('EnvSource', {
  1: ['', LocalObjectReference, 'inline'],
  2: ['optional', 'bool', 'pointer'],
});

const EnvFromSource = message('EnvFromSource', {
  1: ['prefix', 'string'],
  2: ['configMapRef', EnvSource],
  3: ['secretRef', EnvSource],
});

const ContainerPort = message('ContainerPort', {
  1: ['name', 'string'],
  2: ['hostPort', 'int32'],
  3: ['containerPort', 'int32'],
  4: ['protocol', 'string'],
  5: ['hostIP', 'string'],
});

const ResourceRequirements = message('ResourceRequirements', {
  1: ['limits', Quantity, 'map'],
  2: ['requests', Quantity, 'map'],
});

const ProbeHandler = message('ProbeHandler', {
  1: ['exec', message('ExecAction', { 1: ['command', 'string', 'repeated'] })],
  2: [
    'httpGet',
    message('HTTPGetAction', {
      1: ['path', 'string'],
      2: ['port', IntOrString],
      3: ['host', 'string'],
      4: ['scheme', 'string'],
      5: [
        'httpHeaders',
        message('HTTPHeader', { 1: ['name', 'string'], 2: ['value', 'string'] }),
        'repeated',
      ],
    }),
  ],
  3: ['tcpSocket', message('TCPSocketAction', { 1: ['port', IntOrString], 2: ['host', 'string'] })],
  4: ['grpc', message('GRPCAction', { 1: ['port', 'int32'], 2: ['service', 'string', 'pointer'] })],
});

const Probe = message('Probe', {
  1: ['', ProbeHandler, 'inline'],
  2: ['initialDelaySeconds', 'int32'],
  3: ['timeoutSeconds', 'int32'],
  4: ['periodSeconds', 'int32'],
  5: ['successThreshold', 'int32'],
  6: ['failureThreshold', 'int32'],
  7: ['terminationGracePeriodSeconds', 'int64', 'pointer'],
});

const VolumeMount = message('VolumeMount', {
  1: ['name', 'string'],
  2: ['readOnly', 'bool'],
  3: ['mountPath', 'string'],
  4: ['subPath', 'string'],
  5: ['mountPropagation', 'string'],
  6: ['subPathExpr', 'string'],
});

const Container = message('Container', {
  1: ['name', 'string'],
  2: ['image', 'string'],
  3: ['command', 'string', 'repeated'],
  4: ['args', 'string', 'repeated'],
  5: ['workingDir', 'string'],
  6: ['ports', ContainerPort, 'repeated'],
  7: ['env', EnvVar, 'repeated'],
  8: ['resources', ResourceRequirements],
  9: ['volumeMounts', VolumeMount, 'repeated'],
  10: ['livenessProbe', Probe],
  11: ['readinessProbe', Probe],
  13: ['terminationMessagePath', 'string'],
  14: ['imagePullPolicy', 'string'],
  16: ['stdin', 'bool'],
  17: ['stdinOnce', 'bool'],
  18: ['tty', 'bool'],
  19: ['envFrom', EnvFromSource, 'repeated'],
  20: ['terminationMessagePolicy', 'string'],
  22: ['startupProbe', Probe],
  24: ['restartPolicy', 'string'],
});

// --- core/v1: the pod ---

const KeyToPath = message('KeyToPath', {
  1: ['key', 'string'],
  2: ['path', 'string'],
  3: ['mode', 'int32', 'pointer'],
});

/** The common volume sources; VolumeSource is inline in Volume, as in JSON. */
const VolumeSource = message('VolumeSource', {
  1: [
    'hostPath',
    message('HostPathVolumeSource', { 1: ['path', 'string'], 2: ['type', 'string', 'pointer'] }),
  ],
  2: ['emptyDir', message('EmptyDirVolumeSource', { 1: ['medium', 'string'], 2: ['sizeLimit', Quantity] })],
  6: [
    'secret',
    message('SecretVolumeSource', {
      1: ['secretName', 'string'],
      2: ['items', KeyToPath, 'repeated'],
      3: ['defaultMode', 'int32', 'pointer'],
      4: ['optional', 'bool', 'pointer'],
    }),
  ],
  19: [
    'configMap',
    message('ConfigMapVolumeSource', {
      1: ['', LocalObjectReference, 'inline'],
      2: ['items', KeyToPath, 'repeated'],
      3: ['defaultMode', 'int32', 'pointer'],
      4: ['optional', 'bool', 'pointer'],
    }),
  ],
});

const Volume = message('Volume', { 1: ['name', 'string'], 2: ['', VolumeSource, 'inline'] });

const Toleration = message('Toleration', {
  1: ['key', 'string'],
  2: ['operator', 'string'],
  3: ['value', 'string'],
  4: ['effect', 'string'],
  5: ['tolerationSeconds', 'int64', 'pointer'],
});

const PodSpec = message('PodSpec', {
  1: ['volumes', Volume, 'repeated'],
  2: ['containers', Container, 'repeated'],
  3: ['restartPolicy', 'string'],
  4: ['terminationGracePeriodSeconds', 'int64', 'pointer'],
  5: ['activeDeadlineSeconds', 'int64', 'pointer'],
  6: ['dnsPolicy', 'string'],
  7: ['nodeSelector', 'string', 'map'],
  8: ['serviceAccountName', 'string'],
  9: ['serviceAccount', 'string'],
  10: ['nodeName', 'string'],
  11: ['hostNetwork', 'bool'],
  12: ['hostPID', 'bool'],
  13: ['hostIPC', 'bool'],
  15: ['imagePullSecrets', LocalObjectReference, 'repeated'],
  16: ['hostname', 'string'],
  17: ['subdomain', 'string'],
  19: ['schedulerName', 'string'],
  20: ['initContainers', Container, 'repeated'],
  21: ['automountServiceAccountToken', 'bool', 'pointer'],
  22: ['tolerations', Toleration, 'repeated'],
  24: ['priorityClassName', 'string'],
  25: ['priority', 'int32', 'pointer'],
  27: ['shareProcessNamespace', 'bool', 'pointer'],
  29: ['runtimeClassName', 'string', 'pointer'],
  30: ['enableServiceLinks', 'bool', 'pointer'],
  31: ['preemptionPolicy', 'string', 'pointer'],
  35: ['setHostnameAsFQDN', 'bool', 'pointer'],
  37: ['hostUsers', 'bool', 'pointer'],
});

const PodTemplateSpec = message('PodTemplateSpec', { 1: ['metadata', ObjectMeta], 2: ['spec', PodSpec] });

// --- core/v1: Service ---

const ServicePort = message('ServicePort', {
  1: ['name', 'string'],
  2: ['protocol', 'string'],
  3: ['port', 'int32'],
  // Upstream defaults a targetPort of 0 or "" to the port, as it does an absent one; dropping the zero lets the
  // lab's defaulting (which fills an absent targetPort) do the same.
  4: ['targetPort', IntOrString],
  5: ['nodePort', 'int32'],
  6: ['appProtocol', 'string', 'pointer'],
});

const ServiceSpec = message('ServiceSpec', {
  1: ['ports', ServicePort, 'repeated'],
  2: ['selector', 'string', 'map'],
  3: ['clusterIP', 'string'],
  4: ['type', 'string'],
  5: ['externalIPs', 'string', 'repeated'],
  7: ['sessionAffinity', 'string'],
  8: ['loadBalancerIP', 'string'],
  9: ['loadBalancerSourceRanges', 'string', 'repeated'],
  10: ['externalName', 'string'],
  11: ['externalTrafficPolicy', 'string'],
  12: ['healthCheckNodePort', 'int32'],
  13: ['publishNotReadyAddresses', 'bool'],
  14: [
    'sessionAffinityConfig',
    message('SessionAffinityConfig', {
      1: ['clientIP', message('ClientIPConfig', { 1: ['timeoutSeconds', 'int32', 'pointer'] })],
    }),
  ],
  17: ['ipFamilyPolicy', 'string', 'pointer'],
  18: ['clusterIPs', 'string', 'repeated'],
  19: ['ipFamilies', 'string', 'repeated'],
  20: ['allocateLoadBalancerNodePorts', 'bool', 'pointer'],
  21: ['loadBalancerClass', 'string', 'pointer'],
  22: ['internalTrafficPolicy', 'string', 'pointer'],
  23: ['trafficDistribution', 'string', 'pointer'],
});

// --- apps/v1 ---

/** RollingUpdateDeployment and RollingUpdateDaemonSet: both pointers, and maxUnavailable: 0 means something. */
const RollingUpdate = message('RollingUpdate', {
  1: ['maxUnavailable', IntOrString, 'pointer'],
  2: ['maxSurge', IntOrString, 'pointer'],
});

/** DeploymentStrategy and DaemonSetUpdateStrategy. */
const UpdateStrategy = message('UpdateStrategy', {
  1: ['type', 'string'],
  2: ['rollingUpdate', RollingUpdate],
});

const DeploymentSpec = message('DeploymentSpec', {
  1: ['replicas', 'int32', 'pointer'],
  2: ['selector', LabelSelector],
  3: ['template', PodTemplateSpec],
  4: ['strategy', UpdateStrategy],
  5: ['minReadySeconds', 'int32'],
  6: ['revisionHistoryLimit', 'int32', 'pointer'],
  7: ['paused', 'bool'],
  9: ['progressDeadlineSeconds', 'int32', 'pointer'],
});

const DaemonSetSpec = message('DaemonSetSpec', {
  1: ['selector', LabelSelector],
  2: ['template', PodTemplateSpec],
  3: ['updateStrategy', UpdateStrategy],
  4: ['minReadySeconds', 'int32'],
  6: ['revisionHistoryLimit', 'int32', 'pointer'],
});

const ReplicaSetSpec = message('ReplicaSetSpec', {
  1: ['replicas', 'int32', 'pointer'],
  2: ['selector', LabelSelector],
  3: ['template', PodTemplateSpec],
  4: ['minReadySeconds', 'int32'],
});

// --- autoscaling/v1 and v2 ---

const CrossVersionObjectReference = message('CrossVersionObjectReference', {
  1: ['kind', 'string'],
  2: ['name', 'string'],
  3: ['apiVersion', 'string'],
});

const HorizontalPodAutoscalerSpecV1 = message('HorizontalPodAutoscalerSpec', {
  1: ['scaleTargetRef', CrossVersionObjectReference],
  2: ['minReplicas', 'int32', 'pointer'],
  3: ['maxReplicas', 'int32'],
  4: ['targetCPUUtilizationPercentage', 'int32', 'pointer'],
});

const MetricTarget = message('MetricTarget', {
  1: ['type', 'string'],
  2: ['value', Quantity],
  3: ['averageValue', Quantity],
  4: ['averageUtilization', 'int32', 'pointer'],
});

const MetricIdentifier = message('MetricIdentifier', {
  1: ['name', 'string'],
  2: ['selector', LabelSelector],
});

const MetricSpec = message('MetricSpec', {
  1: ['type', 'string'],
  2: [
    'object',
    message('ObjectMetricSource', {
      1: ['describedObject', CrossVersionObjectReference],
      2: ['target', MetricTarget],
      3: ['metric', MetricIdentifier],
    }),
  ],
  3: ['pods', message('PodsMetricSource', { 1: ['metric', MetricIdentifier], 2: ['target', MetricTarget] })],
  4: ['resource', message('ResourceMetricSource', { 1: ['name', 'string'], 2: ['target', MetricTarget] })],
  5: [
    'external',
    message('ExternalMetricSource', { 1: ['metric', MetricIdentifier], 2: ['target', MetricTarget] }),
  ],
  7: [
    'containerResource',
    message('ContainerResourceMetricSource', {
      1: ['name', 'string'],
      2: ['target', MetricTarget],
      3: ['container', 'string'],
    }),
  ],
});

const HPAScalingRules = message('HPAScalingRules', {
  1: ['selectPolicy', 'string', 'pointer'],
  2: [
    'policies',
    message('HPAScalingPolicy', {
      1: ['type', 'string'],
      2: ['value', 'int32'],
      3: ['periodSeconds', 'int32'],
    }),
    'repeated',
  ],
  3: ['stabilizationWindowSeconds', 'int32', 'pointer'],
});

const HorizontalPodAutoscalerSpecV2 = message('HorizontalPodAutoscalerSpec', {
  1: ['scaleTargetRef', CrossVersionObjectReference],
  2: ['minReplicas', 'int32', 'pointer'],
  3: ['maxReplicas', 'int32'],
  4: ['metrics', MetricSpec, 'repeated'],
  5: [
    'behavior',
    message('HorizontalPodAutoscalerBehavior', {
      1: ['scaleUp', HPAScalingRules],
      2: ['scaleDown', HPAScalingRules],
    }),
  ],
});

// --- discovery/v1 ---

const Endpoint = message('Endpoint', {
  1: ['addresses', 'string', 'repeated'],
  2: [
    'conditions',
    message('EndpointConditions', {
      1: ['ready', 'bool', 'pointer'],
      2: ['serving', 'bool', 'pointer'],
      3: ['terminating', 'bool', 'pointer'],
    }),
  ],
  3: ['hostname', 'string', 'pointer'],
  4: ['targetRef', ObjectReference],
  6: ['nodeName', 'string', 'pointer'],
  7: ['zone', 'string', 'pointer'],
  8: [
    'hints',
    message('EndpointHints', { 1: ['forZones', message('ForZone', { 1: ['name', 'string'] }), 'repeated'] }),
  ],
});

// Every field is a pointer: an EndpointSlice port named "" is the Service's unnamed port.
const EndpointPort = message('EndpointPort', {
  1: ['name', 'string', 'pointer'],
  2: ['protocol', 'string', 'pointer'],
  3: ['port', 'int32', 'pointer'],
  4: ['appProtocol', 'string', 'pointer'],
});

// --- rbac/v1 ---

const PolicyRule = message('PolicyRule', {
  1: ['verbs', 'string', 'repeated'],
  2: ['apiGroups', 'string', 'repeated'],
  3: ['resources', 'string', 'repeated'],
  4: ['resourceNames', 'string', 'repeated'],
  5: ['nonResourceURLs', 'string', 'repeated'],
});

const Subject = message('Subject', {
  1: ['kind', 'string'],
  2: ['apiGroup', 'string'],
  3: ['name', 'string'],
  4: ['namespace', 'string'],
});

const RoleRef = message('RoleRef', {
  1: ['apiGroup', 'string'],
  2: ['kind', 'string'],
  3: ['name', 'string'],
});

// --- the top-level objects ---

// Status is left out of every object: a create or update does not set it, and the lab computes its own.
const object = (kind: string, defs: Readonly<Record<number, FieldDef>>): MessageSchema =>
  message(kind, { 1: ['metadata', ObjectMeta], ...defs });

export interface ObjectSchema {
  readonly apiVersion: string;
  readonly message: MessageSchema;
}

const entries: readonly (readonly [string, string, MessageSchema])[] = [
  [
    'v1',
    'Namespace',
    object('Namespace', {
      2: ['spec', message('NamespaceSpec', { 1: ['finalizers', 'string', 'repeated'] })],
    }),
  ],
  [
    'v1',
    'ConfigMap',
    object('ConfigMap', {
      2: ['data', 'string', 'map'],
      3: ['binaryData', 'bytes', 'map'],
      4: ['immutable', 'bool', 'pointer'],
    }),
  ],
  ['v1', 'Service', object('Service', { 2: ['spec', ServiceSpec] })],
  ['v1', 'Pod', object('Pod', { 2: ['spec', PodSpec] })],
  [
    'v1',
    'ServiceAccount',
    object('ServiceAccount', {
      2: ['secrets', ObjectReference, 'repeated'],
      3: ['imagePullSecrets', LocalObjectReference, 'repeated'],
      4: ['automountServiceAccountToken', 'bool', 'pointer'],
    }),
  ],
  ['apps/v1', 'Deployment', object('Deployment', { 2: ['spec', DeploymentSpec] })],
  ['apps/v1', 'DaemonSet', object('DaemonSet', { 2: ['spec', DaemonSetSpec] })],
  ['apps/v1', 'ReplicaSet', object('ReplicaSet', { 2: ['spec', ReplicaSetSpec] })],
  // `kubectl autoscale` (1.32) sends autoscaling/v1; a typed client may send v2.
  [
    'autoscaling/v2',
    'HorizontalPodAutoscaler',
    object('HorizontalPodAutoscaler', { 2: ['spec', HorizontalPodAutoscalerSpecV2] }),
  ],
  [
    'autoscaling/v1',
    'HorizontalPodAutoscaler',
    object('HorizontalPodAutoscaler', { 2: ['spec', HorizontalPodAutoscalerSpecV1] }),
  ],
  // The scale subresource's body: kubectl scale sends a JSON patch, but a typed client's UpdateScale sends a Scale.
  [
    'autoscaling/v1',
    'Scale',
    object('Scale', { 2: ['spec', message('ScaleSpec', { 1: ['replicas', 'int32', 'pointer'] })] }),
  ],
  [
    'discovery.k8s.io/v1',
    'EndpointSlice',
    object('EndpointSlice', {
      2: ['endpoints', Endpoint, 'repeated'],
      3: ['ports', EndpointPort, 'repeated'],
      4: ['addressType', 'string'],
    }),
  ],
  [
    'rbac.authorization.k8s.io/v1',
    'ClusterRole',
    object('ClusterRole', {
      2: ['rules', PolicyRule, 'repeated'],
      3: [
        'aggregationRule',
        message('AggregationRule', { 1: ['clusterRoleSelectors', LabelSelector, 'repeated'] }),
      ],
    }),
  ],
  [
    'rbac.authorization.k8s.io/v1',
    'ClusterRoleBinding',
    object('ClusterRoleBinding', { 2: ['subjects', Subject, 'repeated'], 3: ['roleRef', RoleRef] }),
  ],
];

/** The kinds whose protobuf bodies the lab accepts: by kind, each version served (a kind may have two). */
export const OBJECT_SCHEMAS: ReadonlyMap<string, readonly ObjectSchema[]> = entries.reduce(
  (m, [apiVersion, kind, msg]) => m.set(kind, [...(m.get(kind) ?? []), { apiVersion, message: msg }]),
  new Map<string, ObjectSchema[]>(),
);
