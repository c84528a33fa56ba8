// Services: upstream's defaults (type, protocol, targetPort, affinity, traffic policies, IP families), ClusterIP
// allocation from the ServiceCIDRs' ranges and NodePort allocation from 30000–32767, and the validation that goes
// with them (a requested ClusterIP outside every range or already taken, a NodePort already taken: 422).
import { arr, child, isObject, num, str, type JsonObject } from './json.js';
import { cause, type StatusCause } from './status.js';
import type { Strategy } from './strategy.js';
import { bigIntToIp, cidrContains, cidrSize, ipToBigInt, type Cidr } from './ipnet.js';
import {
  familyName,
  familyOfIP,
  initIPFamilyFields,
  ipFamilyCauses,
  releasesSecondary,
  type ServiceIPFamily,
} from './service-families.js';
import { isValidIP, portCauses, portNameErrors, protocolCauses } from './validation.js';

export const NODE_PORT_MIN = 30000;
export const NODE_PORT_MAX = 32767;

const SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'];

const keyOf = (obj: JsonObject): string =>
  `${str(child(obj, 'metadata'), 'namespace') ?? ''}/${str(child(obj, 'metadata'), 'name') ?? ''}`;
const needsNodePorts = (type: unknown): boolean => type === 'NodePort' || type === 'LoadBalancer';
const needsHealthCheckPort = (spec: JsonObject): boolean =>
  spec.type === 'LoadBalancer' && spec.externalTrafficPolicy === 'Local';
const isHeadless = (spec: JsonObject): boolean => spec.clusterIP === 'None';

/** Which ClusterIPs and NodePorts are taken, and by which Service (namespace/name). */
export class ServiceAllocators {
  readonly clusterIPs = new Map<string, string>();
  readonly nodePorts = new Map<number, string>();
  /** Per range (its text): where the next search for a free address starts. */
  private readonly nextIP = new Map<string, bigint>();
  private nextPort = NODE_PORT_MIN;

  /**
   * `cidrs` are the API server's own service ranges, one per family, primary first (--service-cluster-ip-range):
   * they decide which families Services may have. `ranges` says, at each call, which ranges addresses may come
   * from (the allocatable ServiceCIDRs), the API server's own first when they are among them.
   */
  constructor(
    readonly cidrs: readonly Cidr[],
    private readonly ranges: () => readonly Cidr[] = () => cidrs,
  ) {
    if (cidrs.length === 0) throw new Error('ServiceAllocators: no service range');
  }

  /** The cluster's Service families, primary first. */
  get families(): ServiceIPFamily[] {
    return this.cidrs.map((c) => familyName(c.family));
  }

  private get primaryFamily(): 4 | 6 {
    return this.cidrs[0]?.family ?? 4;
  }

  /** The ranges of this family in the order they are tried: the API server's own first, then as listed. */
  usableRanges(family: 4 | 6 = this.primaryFamily): Cidr[] {
    const all = this.ranges().filter((c) => c.family === family);
    const isOwn = (c: Cidr): boolean => this.cidrs.some((own) => own.text === c.text);
    return [...all.filter(isOwn), ...all.filter((c) => !isOwn(c))];
  }

  /** Whether some range an address may be allocated from holds `ip`. */
  inRange(ip: string): boolean {
    return this.ranges().some((c) => cidrContains(c, ip));
  }

  allocateIP(family: 4 | 6 = this.primaryFamily): string | undefined {
    for (const range of this.usableRanges(family)) {
      const ip = this.allocateIn(range);
      if (ip) return ip;
    }
    return undefined;
  }

  private allocateIn(range: Cidr): string | undefined {
    // Skip the network address and the first host address (upstream keeps .1 for the `kubernetes` Service), and
    // the broadcast address of IPv4 ranges.
    const size = cidrSize(range);
    const usable = size - (range.family === 4 ? 3n : 2n);
    const next = this.nextIP.get(range.text) ?? 0n;
    for (let i = 0n; i < usable; i++) {
      const offset = 2n + ((next + i) % usable);
      const ip = bigIntToIp(range.family, range.base + offset);
      if (!this.clusterIPs.has(ip)) {
        this.nextIP.set(range.text, (next + i + 1n) % usable);
        return ip;
      }
    }
    return undefined;
  }

  allocatePort(taken: ReadonlySet<number>): number | undefined {
    const span = NODE_PORT_MAX - NODE_PORT_MIN + 1;
    for (let i = 0; i < span; i++) {
      const p = NODE_PORT_MIN + ((this.nextPort - NODE_PORT_MIN + i) % span);
      if (!this.nodePorts.has(p) && !taken.has(p)) {
        this.nextPort = p + 1;
        return p;
      }
    }
    return undefined;
  }

  /** Whether a Service other than `self` (namespace/name) holds this ClusterIP. */
  clusterIPHeldByOther(ip: string, self: string): boolean {
    const owner = this.clusterIPs.get(ip);
    return owner !== undefined && owner !== self;
  }

  /** Whether a Service other than `self` holds this NodePort (a service port's or a health check's). */
  nodePortHeldByOther(port: number, self: string): boolean {
    const owner = this.nodePorts.get(port);
    return owner !== undefined && owner !== self;
  }

  record(obj: JsonObject | undefined, old: JsonObject | undefined): void {
    if (old) {
      const k = keyOf(old);
      for (const [ip, owner] of [...this.clusterIPs]) if (owner === k) this.clusterIPs.delete(ip);
      for (const [p, owner] of [...this.nodePorts]) if (owner === k) this.nodePorts.delete(p);
    }
    if (!obj) return;
    const k = keyOf(obj);
    const spec = child(obj, 'spec');
    for (const ip of arr(spec, 'clusterIPs'))
      if (typeof ip === 'string' && ip !== 'None') this.clusterIPs.set(ip, k);
    for (const p of arr(spec, 'ports')) {
      const np = num(p, 'nodePort');
      if (np) this.nodePorts.set(np, k);
    }
    const hc = num(spec, 'healthCheckNodePort');
    if (hc) this.nodePorts.set(hc, k);
  }
}

function ensureSpec(obj: JsonObject): JsonObject {
  if (!isObject(obj.spec)) obj.spec = {};
  return obj.spec as JsonObject;
}

function portDefaults(spec: JsonObject): void {
  for (const p of arr(spec, 'ports')) {
    if (!isObject(p)) continue;
    if (p.protocol === undefined) p.protocol = 'TCP';
    if (p.targetPort === undefined && typeof p.port === 'number') p.targetPort = p.port;
  }
}

function commonDefaults(spec: JsonObject): void {
  if (spec.type === undefined) spec.type = 'ClusterIP';
  if (spec.sessionAffinity === undefined) spec.sessionAffinity = 'None';
  if (spec.type !== 'ExternalName' && spec.internalTrafficPolicy === undefined)
    spec.internalTrafficPolicy = 'Cluster';
  if (needsNodePorts(spec.type) && spec.externalTrafficPolicy === undefined)
    spec.externalTrafficPolicy = 'Cluster';
  if (spec.sessionAffinity === 'ClientIP' && spec.sessionAffinityConfig === undefined)
    spec.sessionAffinityConfig = { clientIP: { timeoutSeconds: 10800 } };
  portDefaults(spec);
}

/** Gives every port that needs one a NodePort, and LoadBalancer+Local a health-check port. */
function allocateNodePorts(spec: JsonObject, alloc: ServiceAllocators): void {
  const taken = new Set<number>();
  for (const p of arr(spec, 'ports')) {
    const np = num(p, 'nodePort');
    if (np) taken.add(np);
  }
  if (needsNodePorts(spec.type)) {
    for (const p of arr(spec, 'ports')) {
      if (!isObject(p) || p.nodePort) continue;
      const np = alloc.allocatePort(taken);
      if (np !== undefined) {
        p.nodePort = np;
        taken.add(np);
      }
    }
  }
  if (needsHealthCheckPort(spec) && !spec.healthCheckNodePort) {
    const hc = alloc.allocatePort(taken);
    if (hc !== undefined) spec.healthCheckNodePort = hc;
  }
}

/** An old client's request names only clusterIP: clusterIPs follows it (upstream's NormalizeClusterIPs). */
function normalizeClusterIPs(spec: JsonObject): void {
  if (typeof spec.clusterIP === 'string' && spec.clusterIP !== '' && spec.clusterIPs === undefined)
    spec.clusterIPs = [spec.clusterIP];
}

/**
 * A ClusterIP for each family of spec.ipFamilies that has none yet, in its order (the primary's is clusterIP);
 * requested addresses are validated, not allocated. Families beyond two are validation's to refuse.
 */
function allocateClusterIPs(spec: JsonObject, alloc: ServiceAllocators): void {
  if (spec.type === 'ExternalName' || spec.clusterIP === 'None') return;
  const families = arr(spec, 'ipFamilies').slice(0, 2);
  const ips = arr(spec, 'clusterIPs').slice();
  if (ips.length === 0 && typeof spec.clusterIP === 'string' && spec.clusterIP !== '')
    ips.push(spec.clusterIP);
  families.forEach((family, i) => {
    if ((typeof ips[i] === 'string' && ips[i] !== '') || i > ips.length) return;
    // A family that already has an address (the request contradicts itself) gets no second one.
    if (ips.some((ip) => familyOfIP(ip) === family)) return;
    const ip = alloc.allocateIP(family === 'IPv6' ? 6 : 4);
    if (ip) ips[i] = ip;
  });
  if (ips.length === 0) return;
  spec.clusterIPs = ips;
  spec.clusterIP = ips[0];
}

/** The families, then their addresses: both follow what is asked, what is stored and what the cluster has. */
function assignFamiliesAndIPs(
  spec: JsonObject,
  oldSpec: JsonObject | undefined,
  alloc: ServiceAllocators,
): void {
  normalizeClusterIPs(spec);
  // Dropping the secondary without SingleStack is refused by validation: nothing is filled in for it.
  if (releasesSecondary(spec, oldSpec)) return;
  initIPFamilyFields(spec, oldSpec, alloc.families);
  allocateClusterIPs(spec, alloc);
}

/** Upstream drops NodePorts (and the health-check port) that the new type no longer uses if the user kept them. */
function dropTypeDependentFields(spec: JsonObject, oldSpec: JsonObject): void {
  if (!needsNodePorts(spec.type) && needsNodePorts(oldSpec.type)) {
    for (const p of arr(spec, 'ports')) {
      if (!isObject(p)) continue;
      const same = arr(oldSpec, 'ports').some(
        (o) => num(o, 'port') === p.port && num(o, 'nodePort') === p.nodePort,
      );
      if (same) delete p.nodePort;
    }
  }
  if (
    !needsHealthCheckPort(spec) &&
    needsHealthCheckPort(oldSpec) &&
    spec.healthCheckNodePort === oldSpec.healthCheckNodePort
  )
    delete spec.healthCheckNodePort;
  if (spec.type === 'ExternalName' && oldSpec.type !== 'ExternalName') {
    for (const f of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy'])
      if (spec[f] === oldSpec[f] || Array.isArray(spec[f])) delete spec[f];
  }
}

/** An update that leaves out allocated values (a `kubectl replace` of a hand-written file) keeps them. */
function keepAllocatedValues(spec: JsonObject, oldSpec: JsonObject): void {
  if (spec.type === 'ExternalName') return;
  if ((spec.clusterIP === undefined || spec.clusterIP === '') && typeof oldSpec.clusterIP === 'string') {
    spec.clusterIP = oldSpec.clusterIP;
    if (spec.clusterIPs === undefined) spec.clusterIPs = oldSpec.clusterIPs;
  }
  // The same clusterIP without clusterIPs: an old client's update, which keeps the secondary address too.
  if (
    spec.clusterIPs === undefined &&
    spec.clusterIP === oldSpec.clusterIP &&
    Array.isArray(oldSpec.clusterIPs)
  )
    spec.clusterIPs = oldSpec.clusterIPs;
  if (needsNodePorts(spec.type) && needsNodePorts(oldSpec.type)) {
    for (const p of arr(spec, 'ports')) {
      if (!isObject(p) || p.nodePort) continue;
      const match = arr(oldSpec, 'ports').find(
        (o) => num(o, 'port') === p.port && str(o, 'protocol') === p.protocol,
      );
      const np = num(match, 'nodePort');
      if (np) p.nodePort = np;
    }
  }
  if (needsHealthCheckPort(spec) && !spec.healthCheckNodePort && oldSpec.healthCheckNodePort)
    spec.healthCheckNodePort = oldSpec.healthCheckNodePort;
}

/** What the ports of one Service have used so far: names, port/protocol pairs, NodePorts by protocol. */
interface SeenPorts {
  readonly names: Set<string>;
  readonly portKeys: Set<string>;
  readonly nodePorts: Map<number, string>;
}

/** The causes of one entry of spec.ports (its name, port, protocol, targetPort and nodePort). */
/**
 * The Service a validation is about: its key (namespace/name: what owns its ClusterIP and NodePorts), its
 * object before an update, and the allocators that know what others hold.
 */
interface ServiceInQuestion {
  readonly self: string;
  readonly old: JsonObject | undefined;
  readonly alloc: ServiceAllocators;
}

function servicePortCauses(
  p: unknown,
  i: number,
  count: number,
  type: string,
  seen: SeenPorts,
  svc: ServiceInQuestion,
): StatusCause[] {
  const out: StatusCause[] = [];
  const f = `spec.ports[${i}]`;
  const name = str(p, 'name');
  if (count > 1 && !name) out.push(cause(`${f}.name`, 'Required value', 'FieldValueRequired'));
  if (name !== undefined && name !== '') {
    if (seen.names.has(name))
      out.push(cause(`${f}.name`, `Duplicate value: "${name}"`, 'FieldValueDuplicate'));
    seen.names.add(name);
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 63)
      out.push(
        cause(
          `${f}.name`,
          `Invalid value: "${name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'`,
        ),
      );
  }
  out.push(...portCauses(`${f}.port`, isObject(p) ? p.port : undefined));
  const proto = isObject(p) ? p.protocol : undefined;
  out.push(...protocolCauses(`${f}.protocol`, proto));
  const pk = `${String(num(p, 'port'))}/${String(proto)}`;
  if (seen.portKeys.has(pk))
    out.push(
      cause(
        `${f}`,
        `Duplicate value: {"port":${String(num(p, 'port'))},"protocol":"${String(proto)}"}`,
        'FieldValueDuplicate',
      ),
    );
  seen.portKeys.add(pk);
  const tp = isObject(p) ? p.targetPort : undefined;
  if (typeof tp === 'number') out.push(...portCauses(`${f}.targetPort`, tp));
  else if (typeof tp === 'string')
    for (const e of portNameErrors(tp)) out.push(cause(`${f}.targetPort`, `Invalid value: "${tp}": ${e}`));
  else if (tp !== undefined)
    out.push(cause(`${f}.targetPort`, 'Invalid value: must be a number or a port name'));
  const np = isObject(p) ? p.nodePort : undefined;
  if (np !== undefined && np !== 0)
    out.push(...nodePortCauses(`${f}.nodePort`, np, String(proto), type, seen, svc));
  return out;
}

function nodePortCauses(
  f: string,
  np: unknown,
  proto: string,
  type: string,
  seen: SeenPorts,
  svc: ServiceInQuestion,
): StatusCause[] {
  if (!needsNodePorts(type))
    return [cause(f, `Forbidden: may not be used when \`type\` is '${type}'`, 'FieldValueForbidden')];
  if (typeof np !== 'number' || !Number.isInteger(np) || np < NODE_PORT_MIN || np > NODE_PORT_MAX)
    return [
      cause(
        f,
        `Invalid value: ${JSON.stringify(np)}: provided port is not in the valid range. The range of valid ports is ${NODE_PORT_MIN}-${NODE_PORT_MAX}`,
      ),
    ];
  const out: StatusCause[] = [];
  if (svc.alloc.nodePortHeldByOther(np, svc.self))
    out.push(cause(f, `Invalid value: ${np}: provided port is already allocated`));
  // The same NodePort may serve one port number over two protocols, nothing else.
  const mine = seen.nodePorts.get(np);
  if (mine !== undefined && mine === proto)
    out.push(cause(f, `Duplicate value: "${np}"`, 'FieldValueDuplicate'));
  seen.nodePorts.set(np, proto);
  return out;
}

/** Session affinity and the traffic policies. */
function policyCauses(spec: JsonObject, type: string): StatusCause[] {
  const out: StatusCause[] = [];
  if (!['None', 'ClientIP'].includes(String(spec.sessionAffinity)))
    out.push(
      cause(
        'spec.sessionAffinity',
        `Unsupported value: ${JSON.stringify(spec.sessionAffinity)}: supported values: "ClientIP", "None"`,
        'FieldValueNotSupported',
      ),
    );
  if (spec.sessionAffinity === 'ClientIP') {
    const t = num(child(child(spec, 'sessionAffinityConfig'), 'clientIP'), 'timeoutSeconds');
    if (t !== undefined && (t <= 0 || t > 86400))
      out.push(
        cause(
          'spec.sessionAffinityConfig.clientIP.timeoutSeconds',
          `Invalid value: ${t}: must be greater than 0 and less than 86400`,
        ),
      );
  }
  for (const [field, allowed] of [
    ['externalTrafficPolicy', ['Cluster', 'Local']],
    ['internalTrafficPolicy', ['Cluster', 'Local']],
  ] as const) {
    const v = spec[field];
    if (v !== undefined && !(allowed as readonly unknown[]).includes(v))
      out.push(
        cause(
          `spec.${field}`,
          `Unsupported value: ${JSON.stringify(v)}: supported values: "Cluster", "Local"`,
          'FieldValueNotSupported',
        ),
      );
  }
  if (spec.externalTrafficPolicy !== undefined && !needsNodePorts(type))
    out.push(
      cause(
        'spec.externalTrafficPolicy',
        `Invalid value: ${JSON.stringify(spec.externalTrafficPolicy)}: may only be set for externally-accessible services`,
      ),
    );
  return out;
}

function validateService(spec: JsonObject, svc: ServiceInQuestion): StatusCause[] {
  const out: StatusCause[] = [];
  const type = spec.type;
  if (typeof type !== 'string' || !SERVICE_TYPES.includes(type)) {
    out.push(
      cause(
        'spec.type',
        `Unsupported value: ${JSON.stringify(type)}: supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`,
        'FieldValueNotSupported',
      ),
    );
    return out;
  }
  if (type === 'ExternalName') {
    if (!str(spec, 'externalName'))
      out.push(cause('spec.externalName', 'Required value', 'FieldValueRequired'));
  }
  const ports = arr(spec, 'ports');
  if (ports.length === 0 && type !== 'ExternalName' && !isHeadless(spec))
    out.push(cause('spec.ports', 'Required value', 'FieldValueRequired'));
  const seen: SeenPorts = { names: new Set(), portKeys: new Set(), nodePorts: new Map() };
  ports.forEach((p, i) => out.push(...servicePortCauses(p, i, ports.length, type, seen, svc)));
  out.push(...policyCauses(spec, type));
  arr(spec, 'externalIPs').forEach((ip, i) => {
    if (typeof ip !== 'string' || !isValidIP(ip))
      out.push(
        cause(`spec.externalIPs[${i}]`, `Invalid value: ${JSON.stringify(ip)}: must be a valid IP address`),
      );
  });
  if (type !== 'ExternalName') {
    out.push(...clusterIPCauses(spec, svc));
    const oldSpec =
      svc.old && child(svc.old, 'spec').type !== 'ExternalName' ? child(svc.old, 'spec') : undefined;
    out.push(...ipFamilyCauses(spec, oldSpec, svc.alloc.families));
  }
  const hc = spec.healthCheckNodePort;
  if (hc !== undefined && hc !== 0) {
    if (!needsHealthCheckPort(spec))
      out.push(
        cause(
          'spec.healthCheckNodePort',
          "Forbidden: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
          'FieldValueForbidden',
        ),
      );
    else if (typeof hc === 'number') {
      if (svc.alloc.nodePortHeldByOther(hc, svc.self))
        out.push(
          cause('spec.healthCheckNodePort', `Invalid value: ${hc}: provided port is already allocated`),
        );
    }
  }
  return out;
}

function clusterIPCauses(spec: JsonObject, svc: ServiceInQuestion): StatusCause[] {
  const { old } = svc;
  const out: StatusCause[] = [];
  const ip = spec.clusterIP;
  const oldSpec = child(old, 'spec');
  if (old && oldSpec.type !== 'ExternalName' && oldSpec.clusterIP !== undefined && ip !== oldSpec.clusterIP)
    return [cause('spec.clusterIPs[0]', 'Invalid value: field is immutable')];
  if (ip === 'None') return out;
  if (typeof ip !== 'string' || !isValidIP(ip)) {
    out.push(
      cause(
        'spec.clusterIPs[0]',
        `Invalid value: ${JSON.stringify(ip ?? null)}: must be empty, 'None', or a valid IP address`,
      ),
    );
    return out;
  }
  const ips = arr(spec, 'clusterIPs');
  if (ips.length > 0 && ips[0] !== ip)
    out.push(
      cause(
        'spec.clusterIPs',
        `Invalid value: ${JSON.stringify(ips)}: must hold the clusterIP as its first element`,
      ),
    );
  // Each address the stored object did not already hold: well formed, in a range, and free.
  const held = old ? [oldSpec.clusterIP, ...arr(oldSpec, 'clusterIPs')] : [];
  (ips.length > 0 ? ips : [ip]).forEach((a, i) => {
    if (i > 0 && (typeof a !== 'string' || !isValidIP(a)))
      out.push(
        cause(`spec.clusterIPs[${i}]`, `Invalid value: ${JSON.stringify(a)}: must be a valid IP address`),
      );
    else if (typeof a === 'string' && !held.includes(a)) out.push(...newAddressCauses(a, svc));
  });
  return out;
}

/** A requested ClusterIP: inside one of its family's ranges, and held by no other Service. */
function newAddressCauses(ip: string, svc: ServiceInQuestion): StatusCause[] {
  const { alloc } = svc;
  if (!alloc.inRange(ip)) {
    const valid = alloc.usableRanges(familyOfIP(ip) === 'IPv6' ? 6 : 4).map((c) => c.text);
    return [
      cause(
        'spec.clusterIPs',
        `Invalid value: ${JSON.stringify([ip])}: failed to allocate IP ${ip}: the provided IP (${ip}) is not in the valid range. The range of valid IPs is ${valid.length > 0 ? valid.join(', ') : '<none>'}`,
      ),
    ];
  }
  if (alloc.clusterIPHeldByOther(normalizeIP(ip), svc.self))
    return [
      cause(
        'spec.clusterIPs',
        `Invalid value: ${JSON.stringify([ip])}: failed to allocate IP ${ip}: provided IP is already allocated`,
      ),
    ];
  return [];
}

function normalizeIP(ip: string): string {
  const p = ipToBigInt(ip);
  return p ? bigIntToIp(p.family, p.value) : ip;
}

export function serviceStrategy(alloc: ServiceAllocators): Strategy {
  return {
    prepareForCreate(obj) {
      const spec = ensureSpec(obj);
      commonDefaults(spec);
      // Requested ClusterIPs are validated (range, duplicates); only missing ones are allocated here.
      assignFamiliesAndIPs(spec, undefined, alloc);
      allocateNodePorts(spec, alloc);
      obj.status = { loadBalancer: {} };
    },
    prepareForUpdate(obj, old) {
      const spec = ensureSpec(obj);
      const oldSpec = child(old, 'spec');
      if (spec.type === undefined) spec.type = 'ClusterIP';
      dropTypeDependentFields(spec, oldSpec);
      keepAllocatedValues(spec, oldSpec);
      commonDefaults(spec);
      if (
        spec.externalTrafficPolicy !== undefined &&
        !needsNodePorts(spec.type) &&
        needsNodePorts(oldSpec.type)
      )
        delete spec.externalTrafficPolicy;
      // From ExternalName a Service is new to addresses; otherwise only a family it gains gets one.
      assignFamiliesAndIPs(spec, oldSpec.type === 'ExternalName' ? undefined : oldSpec, alloc);
      allocateNodePorts(spec, alloc);
    },
    validate(obj, old) {
      return validateService(child(obj, 'spec'), { self: keyOf(obj), old, alloc });
    },
    committed(obj, old) {
      alloc.record(obj, old);
    },
  };
}
