// ServiceCIDR (networking.k8s.io/v1): the ranges ClusterIPs are allocated from. The API server keeps one named
// "kubernetes" for its own service range (upstream's default-servicecidr controller); users add more, and a Service
// may then ask for, or be given, an address in any of them. Validation follows upstream's ValidateServiceCIDR; the
// finalizer and the Ready condition are the ServiceCIDR controller's (controllers/service-cidr.ts).
import { arr, child, jsonEqual, str, type JsonObject } from './json.js';
import { cidrContains, parseCidr, type Cidr } from './ipnet.js';
import { cause, type StatusCause } from './status.js';
import type { Strategy } from './strategy.js';

/** upstream's DefaultServiceCIDRName. */
export const DEFAULT_SERVICE_CIDR_NAME = 'kubernetes';
/** Keeps a ServiceCIDR while Services still hold addresses only it contains (upstream's name). */
export const SERVICE_CIDR_FINALIZER = 'networking.k8s.io/service-cidr-finalizer';

export const cidrsOf = (obj: unknown): string[] =>
  arr(child(obj, 'spec'), 'cidrs').filter((c): c is string => typeof c === 'string');

/**
 * kube-apiserver's --service-cluster-ip-range: one CIDR, or two of different families (primary first). Its
 * families are the cluster's Service families: what RequireDualStack and PreferDualStack are judged against.
 */
export function parseServiceClusterIPRange(text: string): Cidr[] | string {
  const parts = text.split(',').map((p) => p.trim());
  const cidrs: Cidr[] = [];
  for (const part of parts) {
    const c = parseCidr(part);
    if (!c) return `${JSON.stringify(part)} is not a CIDR`;
    cidrs.push(c);
  }
  if (cidrs.length > 2) return `${JSON.stringify(text)}: at most one range per IP family (two in all)`;
  if (cidrs.length === 2 && cidrs[0]?.family === cidrs[1]?.family)
    return `${JSON.stringify(text)}: the two ranges must be of different IP families`;
  return cidrs;
}

/** The default ServiceCIDR for the API server's --service-cluster-ip-range (one CIDR per family). */
export function defaultServiceCIDR(ranges: readonly Cidr[]): JsonObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'ServiceCIDR',
    metadata: { name: DEFAULT_SERVICE_CIDR_NAME },
    spec: { cidrs: ranges.map((r) => r.text) },
  };
}

/**
 * Whether addresses may be allocated from it: not being deleted, and Ready unless a condition says otherwise
 * (upstream's allocator assumes Ready when there is no condition, so a cluster without the controller still works).
 */
export function allocatable(obj: JsonObject): boolean {
  if (str(child(obj, 'metadata'), 'deletionTimestamp') !== undefined) return false;
  const ready = arr(child(obj, 'status'), 'conditions').find((c) => str(c, 'type') === 'Ready');
  return ready === undefined || str(ready, 'status') === 'True';
}

/** The ranges ClusterIPs may come from now: every CIDR of every allocatable ServiceCIDR. */
export function allocatableRanges(objects: readonly JsonObject[]): Cidr[] {
  return objects
    .filter(allocatable)
    .flatMap(cidrsOf)
    .map(parseCidr)
    .filter((c): c is Cidr => c !== undefined);
}

/**
 * Addresses held by Services that no ServiceCIDR but `obj` contains: deleting `obj` would leave them outside every
 * range, so its finalizer stays (upstream's canDeleteCIDR, over Services instead of IPAddress objects).
 */
export function orphanedBy(
  obj: JsonObject,
  others: readonly JsonObject[],
  clusterIPs: readonly string[],
): string[] {
  const mine = cidrsOf(obj)
    .map(parseCidr)
    .filter((c): c is Cidr => c !== undefined);
  const elsewhere = allocatableRanges(others);
  return clusterIPs.filter(
    (ip) => mine.some((c) => cidrContains(c, ip)) && !elsewhere.some((c) => cidrContains(c, ip)),
  );
}

function cidrCauses(cidrs: readonly unknown[]): StatusCause[] {
  const field = 'spec.cidrs';
  if (cidrs.length === 0)
    return [cause(field, 'Required value: at least one CIDR required', 'FieldValueRequired')];
  const spec = JSON.stringify({ cidrs });
  if (cidrs.length > 2) return [cause(field, `Invalid value: ${spec}: may only hold up to 2 values`)];
  const parsed = cidrs.map((c) => (typeof c === 'string' ? parseCidr(c) : undefined));
  const out: StatusCause[] = [];
  parsed.forEach((p, i) => {
    if (!p)
      out.push(
        cause(
          `${field}[${i}]`,
          `Invalid value: ${JSON.stringify(cidrs[i])}: must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`,
        ),
      );
  });
  if (out.length === 0 && parsed.length === 2 && parsed[0]?.family === parsed[1]?.family)
    out.push(
      cause(
        field,
        `Invalid value: ${spec}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64`,
      ),
    );
  return out;
}

export const serviceCIDRStrategy: Strategy = {
  prepareForCreate(obj) {
    // Status is the controller's to write, through the status subresource.
    delete obj.status;
  },
  validate(obj, old) {
    const cidrs = arr(child(obj, 'spec'), 'cidrs');
    const out = cidrCauses(cidrs);
    if (!old) return out;
    const before = cidrsOf(old);
    // The one change upstream allows: a single-stack range gains its other family.
    const upgrade = before.length === 1 && cidrs.length === 2 && cidrs[0] === before[0];
    if (!jsonEqual(before, cidrs) && !upgrade)
      out.push(cause('spec.cidrs', 'Invalid value: field is immutable'));
    return out;
  },
};
