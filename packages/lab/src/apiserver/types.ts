// Typed subsets of the kinds the lab serves beyond src/api/objects.ts (which has Service, EndpointSlice, Node).
// Like those, these describe shapes we expect; the server validates before storing, controllers still check.
import type { ObjectMeta, TypeMeta } from 'kube-proxy-ts/api/objects.js';

export interface ContainerPort {
  readonly name?: string;
  readonly containerPort?: number;
  readonly protocol?: string;
  readonly hostPort?: number;
}

export interface Container {
  readonly name?: string;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly ports?: readonly ContainerPort[];
  readonly env?: readonly { readonly name: string; readonly value?: string }[];
}

export interface PodSpec {
  readonly nodeName?: string;
  readonly containers?: readonly Container[];
  readonly restartPolicy?: string;
  readonly terminationGracePeriodSeconds?: number;
  readonly hostNetwork?: boolean;
  readonly schedulerName?: string;
}

export interface PodCondition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly lastTransitionTime?: string;
}

export interface PodStatus {
  readonly phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  readonly podIP?: string;
  readonly podIPs?: readonly { readonly ip: string }[];
  readonly hostIP?: string;
  readonly conditions?: readonly PodCondition[];
  readonly startTime?: string;
  readonly containerStatuses?: readonly {
    readonly name: string;
    readonly ready: boolean;
    readonly restartCount: number;
    readonly started?: boolean;
    readonly image?: string;
    readonly imageID?: string;
    readonly state?: Readonly<Record<string, unknown>>;
  }[];
}

export interface Pod extends TypeMeta {
  readonly metadata: ObjectMeta;
  readonly spec?: PodSpec;
  readonly status?: PodStatus;
}

export interface Namespace extends TypeMeta {
  readonly metadata: ObjectMeta;
  readonly status?: { readonly phase?: 'Active' | 'Terminating' };
}

export interface ConfigMap extends TypeMeta {
  readonly metadata: ObjectMeta;
  readonly data?: Readonly<Record<string, string>>;
  readonly binaryData?: Readonly<Record<string, string>>;
}

export interface LabelSelectorSpec {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | string;
    readonly values?: readonly string[];
  }[];
}

export interface Deployment extends TypeMeta {
  readonly metadata: ObjectMeta;
  readonly spec?: {
    readonly replicas?: number;
    readonly selector?: LabelSelectorSpec;
    readonly template?: { readonly metadata?: ObjectMeta; readonly spec?: PodSpec };
    readonly strategy?: Readonly<Record<string, unknown>>;
    readonly paused?: boolean;
  };
  readonly status?: {
    readonly observedGeneration?: number;
    readonly replicas?: number;
    readonly updatedReplicas?: number;
    readonly readyReplicas?: number;
    readonly availableReplicas?: number;
    readonly unavailableReplicas?: number;
    readonly conditions?: readonly Readonly<Record<string, unknown>>[];
  };
}

/** How a node is registered at start. */
export interface NodeSpec {
  readonly name: string;
  /** Pod addresses come from here (default 198.18.(10+n).0/24 for the n-th node). */
  readonly podCIDR?: string;
  /** InternalIP (default 198.18.0.(10+n)). */
  readonly internalIP?: string;
  /** A dual-stack node's pod CIDRs and InternalIPs, one per family, primary first (over podCIDR, internalIP). */
  readonly podCIDRs?: readonly string[];
  readonly internalIPs?: readonly string[];
  /** topology.kubernetes.io/zone label, when set. */
  readonly zone?: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** status.nodeInfo.kernelVersion (default: this host's, which namespace nodes share); a guest node's own. */
  readonly kernelVersion?: string;
  /** spec.taints beside the control-plane one (a guest node's: only what tolerates it goes there). */
  readonly taints?: readonly { readonly key: string; readonly value?: string; readonly effect: string }[];
}

/**
 * A stored Pod as the typed view. Safe because the registry validated the object when it was written (metadata
 * is an object, containers a list); fields stay optional in the type, so readers still check them.
 */
export function storedPod(obj: { readonly [key: string]: unknown }): Pod {
  return structuredClone(obj) as unknown as Pod;
}
