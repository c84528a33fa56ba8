// What one port of a Service asks of this node, for one IP family (upstream pkg/proxy/serviceport.go).
import type { Service } from '../kube/objects.js';
import type { IPFamily } from './ip.js';
import type { Protocol, ServicePortName } from './service-port-name.js';

export interface ServicePort {
  /** servicePortKey(name): the map key shared with the endpoints map. */
  readonly key: string;
  readonly name: ServicePortName;
  /** "ns/name:port" (servicePortNameString). */
  readonly nameString: string;
  /** "ns/name": the Service this port belongs to, as named in UpdatedServices. */
  readonly serviceName: string;
  readonly family: IPFamily;
  /** Canonical ClusterIP of this family. */
  readonly clusterIP: string;
  readonly port: number;
  readonly protocol: Protocol;
  /** 0 when the port has none. */
  readonly nodePort: number;
  readonly sessionAffinityClientIP: boolean;
  /** sessionAffinityConfig.clientIP.timeoutSeconds for ClientIP (default 10800), else 0. */
  readonly stickyMaxAgeSeconds: number;
  /** Canonical externalIPs of this family. */
  readonly externalIPs: readonly string[];
  /** Canonical CIDRs of this family, trimmed and normalised. */
  readonly loadBalancerSourceRanges: readonly string[];
  /** Canonical status.loadBalancer.ingress IPs of this family in VIP mode. */
  readonly loadBalancerVIPs: readonly string[];
  /** Only for LoadBalancer with externalTrafficPolicy Local; else 0. */
  readonly healthCheckNodePort: number;
  readonly externalPolicyLocal: boolean;
  readonly internalPolicyLocal: boolean;
}

export interface ServicePortsResult {
  /** The Service's ports for this family; empty when skipped. */
  readonly ports: readonly ServicePort[];
  /** Why the whole Service is skipped for this family (headless, ExternalName, no IP of this family, …). */
  readonly skipped?: string;
  /** Problems with parts of the Service that were dropped while the rest was used (a port without a number, …). */
  readonly problems: readonly string[];
}

/** Derives the service ports of `svc` for `family`. Never throws, whatever the object holds. */
export declare function servicePortsFromService(svc: Service, family: IPFamily): ServicePortsResult;
/** nodePort ≠ 0, or any LB VIP or externalIP of this family (data-based, per family). */
export declare function externallyAccessible(sp: ServicePort): boolean;
/** !internalPolicyLocal || externallyAccessible. */
export declare function usesClusterEndpoints(sp: ServicePort): boolean;
/** internalPolicyLocal || (externalPolicyLocal && externallyAccessible). */
export declare function usesLocalEndpoints(sp: ServicePort): boolean;
/** "clusterIP:port/PROTO" (IPv6 bracketed). */
export declare function servicePortString(sp: ServicePort): string;
