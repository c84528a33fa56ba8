// The unit of work: one port of one Service (upstream pkg/proxy/types.go ServicePortName).
import type { IPFamily } from './ip.js';

export const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export interface NamespacedName {
  readonly namespace: string;
  readonly name: string;
}

export interface ServicePortName {
  readonly namespace: string;
  readonly name: string;
  /** The ServicePort's *name*; "" for an unnamed port. */
  readonly port: string;
  readonly protocol: Protocol;
}

/** "ns/name" — the key of a Service (upstream's types.NamespacedName.String()). */
export declare function namespacedNameString(n: NamespacedName): string;
/** "ns/name:port", or "ns/name" for an unnamed port. The protocol is part of the identity but not of the string. */
export declare function servicePortNameString(n: ServicePortName): string;
/**
 * The map key of a service port: unique per (namespace, name, port name, protocol) even for hostile names
 * (fields are joined with a separator that cannot occur in them). Service ports and endpoint lists share it.
 */
export declare function servicePortKey(n: ServicePortName): string;
/** Parses a protocol as the API spells it ("TCP", "UDP", "SCTP"); undefined otherwise. Empty means TCP. */
export declare function parseProtocol(p: string | null | undefined): Protocol | undefined;
export type { IPFamily };
