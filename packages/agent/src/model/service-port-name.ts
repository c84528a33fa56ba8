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
export function namespacedNameString(n: NamespacedName): string {
  return flat(n.namespace, '/', n.name);
}

/**
 * The pieces as one flat string. `a + b` of 13 characters or more is a rope in V8 (a node pointing at both
 * parts), and stays two or three objects once flattened; these names are kept for every service port (100,000
 * and more), so they are made flat from the start, by join.
 */
function flat(...parts: string[]): string {
  return parts.join('');
}

/** "ns/name:port", or "ns/name" for an unnamed port. The protocol is part of the identity but not of the string. */
export function servicePortNameString(n: ServicePortName): string {
  return n.port === '' ? namespacedNameString(n) : flat(n.namespace, '/', n.name, ':', n.port);
}

/**
 * The map key of a service port: unique per (namespace, name, port name, protocol) even for hostile names
 * (fields are joined with a separator that cannot occur in them). Service ports and endpoint lists share it.
 */
export function servicePortKey(n: ServicePortName): string {
  // A JSON array quotes and escapes every field, so no name (quotes, slashes, colons, newlines) can make two
  // different tuples collide, and the key can be decoded again (servicePortNameFromKey).
  return JSON.stringify([n.namespace, n.name, n.port, n.protocol]);
}

/** Decodes a servicePortKey; undefined for a string that is not one. */
export function servicePortNameFromKey(key: string): ServicePortName | undefined {
  let v: unknown;
  try {
    v = JSON.parse(key);
  } catch {
    return undefined;
  }
  if (!Array.isArray(v) || v.length !== 4 || !v.every((x) => typeof x === 'string')) return undefined;
  const [namespace, name, port, protocol] = v as [string, string, string, string];
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) return undefined;
  return { namespace, name, port, protocol: protocol as Protocol };
}

/** Parses a protocol as the API spells it ("TCP", "UDP", "SCTP"); undefined otherwise. Empty means TCP. */
export function parseProtocol(p: string | null | undefined): Protocol | undefined {
  // The API server defaults an omitted protocol to TCP; a value of another type is not a protocol.
  if (p === undefined || p === null || p === '') return 'TCP';
  if (typeof p !== 'string') return undefined;
  return (PROTOCOLS as readonly string[]).includes(p) ? (p as Protocol) : undefined;
}
export type { IPFamily };
