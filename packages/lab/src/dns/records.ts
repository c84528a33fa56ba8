// The cluster's DNS records, as the Kubernetes DNS specification (kubernetes/dns, docs/specification.md) and
// CoreDNS's kubernetes plugin give them, from the Services and EndpointSlices this table is told of:
//   <svc>.<ns>.svc.<zone>                 A/AAAA: the ClusterIPs; for a headless Service (clusterIP None), the
//                                         addresses of its ready endpoints (all of them with
//                                         publishNotReadyAddresses); ExternalName: a CNAME
//   <host>.<svc>.<ns>.svc.<zone>          a headless Service's endpoint: its hostname, or its address with dashes
//   _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV for each named port (ClusterIP: the Service's name and port;
//                                         headless: each ready endpoint's name and the slice's port)
//   <a-b-c-d>.<ns>.pod.<zone>             A (AAAA with dashes for colons): CoreDNS's `pods insecure`, no check
// A name with no records but records below it (`svc.<zone>`, `<ns>.svc.<zone>`, …) exists: asked for any type it
// answers NOERROR with no data, as RFC 8020 wants of such empty non-terminals; a name that does not exist is
// NXDOMAIN; a name outside the zone is REFUSED (this server forwards nothing: the lab is offline). Negative
// answers carry the zone's SOA, so that resolvers may cache them for the SOA's minimum (the records' TTL).
//
// The index is rebuilt on the first lookup after a change, so an answer always reflects the last event: the cost
// of a change is one rebuild, proportional to the cluster, which a lab's few hundred Services make negligible.
import { isIPv4, isIPv6 } from 'node:net';
import type { EndpointSlice, Service } from 'kube-proxy-ts/api/objects.js';
import { LABEL_SERVICE_NAME } from 'kube-proxy-ts/api/objects.js';
import {
  CLASS_IN,
  RCODE,
  RR_TYPE,
  recordType,
  type RecordData,
  type RecordSections,
  type ResourceRecord,
} from './wire.js';

export const CLUSTER_DOMAIN = 'cluster.local';
/** CoreDNS's kubernetes plugin's default TTL: short, since Services change. */
export const RECORD_TTL = 5;
/** How many CNAMEs inside the zone an answer follows before it stops. */
const MAX_CNAME_HOPS = 8;

export interface LookupResult extends RecordSections {
  readonly rcode: number;
  /** Whether this server is the authority for the name (true inside the zone). */
  readonly authoritative: boolean;
}

interface RecordIndex {
  /** Lower-case name → its records. */
  readonly records: ReadonlyMap<string, readonly RecordData[]>;
  /** Every name that exists: those with records and every ancestor of them inside the zone. */
  readonly names: ReadonlySet<string>;
}

function keyOf(meta: { readonly namespace?: string; readonly name?: string }): string {
  return `${meta.namespace ?? ''}/${meta.name ?? ''}`;
}

/** A name for lookups: lower case (DNS names are case-insensitive, RFC 4343), no final dot. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

/** `_<port>._<proto>.<base>`: where a named port's SRV records are. */
function srvName(port: string, protocol: string | null | undefined, base: string): string {
  return `_${port}._${(protocol ?? 'TCP').toLowerCase()}.${base}`;
}

function addressRecord(address: string): RecordData | undefined {
  if (isIPv4(address)) return { kind: 'A', address };
  if (isIPv6(address)) return { kind: 'AAAA', address };
  return undefined;
}

/** An endpoint's address as a DNS label: 198.18.10.5 → 198-18-10-5, 2001:db8::5 → 2001-db8--5. */
export function addressLabel(address: string): string {
  return address.replace(/[.:]/g, '-');
}

class IndexBuilder {
  readonly records = new Map<string, RecordData[]>();
  private readonly seen = new Set<string>();

  add(name: string, data: RecordData | undefined): void {
    if (!data) return;
    const key = normalizeName(name);
    const id = `${key} ${JSON.stringify(data)}`;
    if (this.seen.has(id)) return;
    this.seen.add(id);
    const list = this.records.get(key) ?? [];
    list.push(data);
    this.records.set(key, list);
  }

  /** `name` exists, with or without records. */
  touch(name: string): void {
    const key = normalizeName(name);
    if (!this.records.has(key)) this.records.set(key, []);
  }

  done(zone: string): RecordIndex {
    const names = new Set<string>([zone, `svc.${zone}`, `pod.${zone}`]);
    for (const name of this.records.keys())
      for (let n = name; n.length > zone.length && n.endsWith(`.${zone}`); n = n.slice(n.indexOf('.') + 1))
        names.add(n);
    return { records: this.records, names };
  }
}

function serviceRecords(b: IndexBuilder, svc: Service, slices: readonly EndpointSlice[], zone: string): void {
  const base = `${svc.metadata.name ?? ''}.${svc.metadata.namespace ?? ''}.svc.${zone}`;
  const spec = svc.spec ?? {};
  if (spec.type === 'ExternalName') {
    if (spec.externalName) b.add(base, { kind: 'CNAME', target: spec.externalName });
    return;
  }
  if (spec.clusterIP === 'None')
    return headlessRecords(b, base, spec.publishNotReadyAddresses === true, slices);
  const clusterIPs = spec.clusterIPs ?? (spec.clusterIP ? [spec.clusterIP] : []);
  for (const ip of clusterIPs) b.add(base, addressRecord(ip));
  // A Service without a ClusterIP yet still exists: its name answers with no data rather than NXDOMAIN.
  if (clusterIPs.length === 0) b.touch(base);
  for (const p of spec.ports ?? []) {
    if (!p.name || p.port === undefined) continue;
    b.add(srvName(p.name, p.protocol, base), {
      kind: 'SRV',
      priority: 0,
      weight: 100,
      port: p.port,
      target: base,
    });
  }
}

function headlessRecords(
  b: IndexBuilder,
  base: string,
  publishNotReady: boolean,
  slices: readonly EndpointSlice[],
): void {
  // A headless Service with no ready endpoint still exists: NOERROR with no data, as CoreDNS answers.
  b.touch(base);
  const srvTargets = new Map<string, { port: number; target: string }[]>();
  for (const slice of slices) {
    if (slice.addressType === 'FQDN') continue;
    for (const ep of slice.endpoints ?? []) {
      if (!publishNotReady && ep.conditions?.ready === false) continue;
      const first = ep.addresses?.[0];
      if (first === undefined) continue;
      const host = `${ep.hostname ?? addressLabel(first)}.${base}`;
      for (const a of ep.addresses ?? []) {
        b.add(base, addressRecord(a));
        b.add(host, addressRecord(a));
      }
      for (const p of slice.ports ?? []) {
        if (!p.name || p.port === undefined || p.port === null) continue;
        const srv = srvName(p.name, p.protocol, base);
        const list = srvTargets.get(srv) ?? [];
        list.push({ port: p.port, target: host });
        srvTargets.set(srv, list);
      }
    }
  }
  // CoreDNS's weights: the endpoints of one port share 100 evenly.
  for (const [srv, targets] of srvTargets)
    for (const t of targets)
      b.add(srv, {
        kind: 'SRV',
        priority: 0,
        weight: Math.floor(100 / targets.length),
        port: t.port,
        target: t.target,
      });
}

/** The Services and EndpointSlices of a cluster, answering DNS lookups from them. */
export class ClusterRecords {
  private readonly services = new Map<string, Service>();
  private readonly slices = new Map<string, EndpointSlice>();
  private index: RecordIndex | undefined;
  /** The SOA serial: moves on every change, as a zone's would. */
  private serial = 1;

  constructor(readonly zone: string = CLUSTER_DOMAIN) {}

  setService(svc: Service): void {
    this.services.set(keyOf(svc.metadata), svc);
    this.changed();
  }

  deleteService(svc: Service): void {
    this.services.delete(keyOf(svc.metadata));
    this.changed();
  }

  setSlice(slice: EndpointSlice): void {
    this.slices.set(keyOf(slice.metadata), slice);
    this.changed();
  }

  deleteSlice(slice: EndpointSlice): void {
    this.slices.delete(keyOf(slice.metadata));
    this.changed();
  }

  /** The answer to one question, `name` as it was asked (its case is kept in the answer's owner names). */
  lookup(name: string, type: number): LookupResult {
    const key = normalizeName(name);
    if (!this.inZone(key))
      return { rcode: RCODE.REFUSED, authoritative: false, answers: [], authority: [], additional: [] };
    const index = this.current();
    const answers: ResourceRecord[] = [];
    let owner = name.replace(/\.$/, '');
    for (let hop = 0; hop <= MAX_CNAME_HOPS; hop++) {
      const data = this.recordsAt(index, normalizeName(owner));
      if (data === undefined) return this.negative(RCODE.NXDOMAIN, answers);
      const cname = data.find((d) => d.kind === 'CNAME');
      if (cname?.kind === 'CNAME' && type !== RR_TYPE.CNAME && type !== RR_TYPE.ANY) {
        answers.push(this.rr(owner, cname));
        if (!this.inZone(normalizeName(cname.target))) break;
        owner = cname.target;
        continue;
      }
      const matching = data.filter((d) => type === RR_TYPE.ANY || recordType(d) === type);
      answers.push(...matching.map((d) => this.rr(owner, d)));
      break;
    }
    if (answers.length === 0) return this.negative(RCODE.NOERROR, answers);
    return {
      rcode: RCODE.NOERROR,
      authoritative: true,
      answers,
      authority: [],
      additional: this.srvAddresses(index, answers),
    };
  }

  private inZone(key: string): boolean {
    return key === this.zone || key.endsWith(`.${this.zone}`);
  }

  private changed(): void {
    this.index = undefined;
    this.serial = (this.serial + 1) >>> 0 || 1;
  }

  private current(): RecordIndex {
    if (this.index) return this.index;
    const bySvc = new Map<string, EndpointSlice[]>();
    for (const slice of this.slices.values()) {
      const svc = slice.metadata.labels?.[LABEL_SERVICE_NAME];
      if (svc === undefined) continue;
      const k = keyOf({ namespace: slice.metadata.namespace ?? '', name: svc });
      bySvc.set(k, [...(bySvc.get(k) ?? []), slice]);
    }
    const b = new IndexBuilder();
    b.add(this.zone, this.soa());
    for (const [k, svc] of this.services) serviceRecords(b, svc, bySvc.get(k) ?? [], this.zone);
    this.index = b.done(this.zone);
    return this.index;
  }

  /** The records at `key`, or undefined when the name does not exist. */
  private recordsAt(index: RecordIndex, key: string): readonly RecordData[] | undefined {
    const found = index.records.get(key);
    if (found) return found;
    const pod = this.podRecord(key);
    if (pod) return [pod];
    return index.names.has(key) ? [] : undefined;
  }

  /** `<a-b-c-d>.<ns>.pod.<zone>`: the address the first label spells, whatever the namespace. */
  private podRecord(key: string): RecordData | undefined {
    const suffix = `.pod.${this.zone}`;
    if (!key.endsWith(suffix)) return undefined;
    const labels = key.slice(0, -suffix.length).split('.');
    if (labels.length !== 2 || labels[0] === undefined) return undefined;
    const dotted = labels[0].replace(/-/g, '.');
    if (isIPv4(dotted)) return { kind: 'A', address: dotted };
    const colons = labels[0].replace(/-/g, ':');
    return isIPv6(colons) ? { kind: 'AAAA', address: colons } : undefined;
  }

  private negative(rcode: number, answers: readonly ResourceRecord[]): LookupResult {
    return {
      rcode,
      authoritative: true,
      answers,
      authority: [this.rr(this.zone, this.soa())],
      additional: [],
    };
  }

  /** The addresses of SRV targets inside the zone, as CoreDNS adds them (saves the client a lookup). */
  private srvAddresses(index: RecordIndex, answers: readonly ResourceRecord[]): ResourceRecord[] {
    const out: ResourceRecord[] = [];
    const done = new Set<string>();
    for (const a of answers) {
      if (a.data.kind !== 'SRV') continue;
      const target = normalizeName(a.data.target);
      if (done.has(target)) continue;
      done.add(target);
      for (const d of index.records.get(target) ?? [])
        if (d.kind === 'A' || d.kind === 'AAAA') out.push(this.rr(a.data.target, d));
    }
    return out;
  }

  private soa(): RecordData {
    return {
      kind: 'SOA',
      mname: `ns.dns.${this.zone}`,
      rname: `hostmaster.${this.zone}`,
      serial: this.serial,
      refresh: 7200,
      retry: 1800,
      expire: 86400,
      minimum: RECORD_TTL,
    };
  }

  private rr(name: string, data: RecordData): ResourceRecord {
    return { name, class: CLASS_IN, ttl: RECORD_TTL, data };
  }
}
