// Typed subsets of the Kubernetes objects kube-proxy-ts reads. These describe the *shape we expect*; objects
// arrive from the network and may not match, so every consumer checks fields before trusting them (the model's
// functions never assume a field is present or well-typed).

export interface ObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly creationTimestamp?: string;
  readonly deletionTimestamp?: string;
  readonly deletionGracePeriodSeconds?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly ownerReferences?: readonly OwnerReference[];
}

export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller?: boolean;
}

export interface TypeMeta {
  readonly apiVersion?: string;
  readonly kind?: string;
}

export type ServiceType = 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
export type TrafficPolicy = 'Cluster' | 'Local';
export type IPFamilyName = 'IPv4' | 'IPv6';

export interface ServicePortSpec {
  readonly name?: string;
  readonly protocol?: string;
  readonly port?: number;
  readonly targetPort?: number | string;
  readonly nodePort?: number;
  readonly appProtocol?: string;
}

export interface ServiceSpec {
  readonly type?: ServiceType | string;
  readonly selector?: Readonly<Record<string, string>>;
  readonly ports?: readonly ServicePortSpec[];
  readonly clusterIP?: string;
  readonly clusterIPs?: readonly string[];
  readonly ipFamilies?: readonly (IPFamilyName | string)[];
  readonly ipFamilyPolicy?: string;
  readonly externalIPs?: readonly string[];
  readonly externalName?: string;
  readonly loadBalancerIP?: string;
  readonly loadBalancerSourceRanges?: readonly string[];
  readonly externalTrafficPolicy?: TrafficPolicy | string;
  readonly internalTrafficPolicy?: TrafficPolicy | string;
  readonly healthCheckNodePort?: number;
  readonly sessionAffinity?: 'None' | 'ClientIP' | string;
  readonly sessionAffinityConfig?: { readonly clientIP?: { readonly timeoutSeconds?: number } };
  readonly trafficDistribution?: string;
  readonly publishNotReadyAddresses?: boolean;
}

export interface LoadBalancerIngress {
  readonly ip?: string;
  readonly hostname?: string;
  readonly ipMode?: 'VIP' | 'Proxy' | string;
}

export interface Service extends TypeMeta {
  readonly metadata: ObjectMeta;
  readonly spec?: ServiceSpec;
  readonly status?: { readonly loadBalancer?: { readonly ingress?: readonly LoadBalancerIngress[] } };
}

export interface EndpointConditions {
  readonly ready?: boolean | null;
  readonly serving?: boolean | null;
  readonly terminating?: boolean | null;
}

export interface EndpointHints {
  readonly forZones?: readonly { readonly name: string }[];
  readonly forNodes?: readonly { readonly name: string }[];
}

export interface EndpointSliceEndpoint {
  readonly addresses?: readonly string[];
  readonly conditions?: EndpointConditions;
  readonly hostname?: string;
  readonly targetRef?: {
    readonly kind?: string;
    readonly namespace?: string;
    readonly name?: string;
    readonly uid?: string;
  };
  readonly nodeName?: string;
  readonly zone?: string;
  readonly hints?: EndpointHints;
}

export interface EndpointSlicePort {
  readonly name?: string | null;
  readonly protocol?: string | null;
  readonly port?: number | null;
  readonly appProtocol?: string;
}

export type AddressType = 'IPv4' | 'IPv6' | 'FQDN';

export interface EndpointSlice extends TypeMeta {
  readonly metadata: ObjectMeta;
  readonly addressType?: AddressType | string;
  readonly endpoints?: readonly EndpointSliceEndpoint[] | null;
  readonly ports?: readonly EndpointSlicePort[] | null;
}

export interface NodeAddress {
  readonly type: 'InternalIP' | 'ExternalIP' | 'Hostname' | string;
  readonly address: string;
}

export interface Node extends TypeMeta {
  readonly metadata: ObjectMeta;
  readonly spec?: {
    readonly podCIDR?: string;
    readonly podCIDRs?: readonly string[];
    readonly taints?: readonly { readonly key: string; readonly value?: string; readonly effect: string }[];
    readonly unschedulable?: boolean;
  };
  readonly status?: { readonly addresses?: readonly NodeAddress[] };
}

/** Well-known labels and annotations kube-proxy acts on. */
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
export const LABEL_SERVICE_PROXY_NAME = 'service.kubernetes.io/service-proxy-name';
export const LABEL_HEADLESS = 'service.kubernetes.io/headless';
export const LABEL_TOPOLOGY_ZONE = 'topology.kubernetes.io/zone';
export const ANNOTATION_LAST_CHANGE_TRIGGER_TIME = 'endpoints.kubernetes.io/last-change-trigger-time';
export const TAINT_TO_BE_DELETED_BY_CA = 'ToBeDeletedByClusterAutoscaler';

/** networking.k8s.io/v1 ServiceCIDR: a range the API server allocates ClusterIPs from (one per family, or two). */
export interface ServiceCIDR extends TypeMeta {
  readonly metadata: ObjectMeta;
  readonly spec?: { readonly cidrs?: readonly string[] };
}
