// What one port of a Service asks of this node, for one IP family (upstream pkg/proxy/serviceport.go).
import type { Service } from '../api/objects.js';
import { LABEL_SERVICE_PROXY_NAME } from '../api/objects.js';
import { parseCIDRSloppy, parseIPSloppy } from './ip.js';
import type { IPFamily } from './ip.js';
import {
  namespacedNameString,
  parseProtocol,
  servicePortKey,
  servicePortNameString,
} from './service-port-name.js';
import type { Protocol, ServicePortName } from './service-port-name.js';
import {
  arrayField,
  describeValue,
  field,
  isPortNumber,
  isRecord,
  objectName,
  stringField,
} from './unknown.js';

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
  /**
   * True when the skip is an ordinary kind of Service, not a broken one (headless, ExternalName, another proxy's,
   * no ClusterIP of this family): worth a debug line, not a warning.
   */
  readonly routine?: boolean;
}

/** The API server's default for sessionAffinityConfig.clientIP.timeoutSeconds (3 hours). */
export const DEFAULT_CLIENT_IP_TIMEOUT_SECONDS = 10800;

function skip(reason: string): ServicePortsResult {
  return { ports: [], skipped: reason, problems: [] };
}

function skipRoutinely(reason: string): ServicePortsResult {
  return { ports: [], skipped: reason, problems: [], routine: true };
}

/** The raw ClusterIP text for `family`, as upstream's GetClusterIPByFamily picks it; "" when there is none. */
function clusterIPTextFor(spec: unknown, family: IPFamily): { text: string; field: string } {
  const clusterIP = stringField(spec, 'clusterIP') ?? '';
  const families = arrayField(spec, 'ipFamilies') ?? [];
  if (families.length === 0) return { text: clusterIP, field: 'spec.clusterIP' };
  const idx = families.indexOf(family);
  if (idx < 0) return { text: '', field: 'spec.clusterIPs' };
  const ips = arrayField(spec, 'clusterIPs') ?? [];
  const text = ips[idx];
  if (typeof text === 'string') return { text, field: `spec.clusterIPs[${idx}]` };
  // clusterIPs missing (a hand-written object): the single clusterIP stands for the first family.
  if (idx === 0 && ips.length === 0) return { text: clusterIP, field: 'spec.clusterIP' };
  return { text: '', field: `spec.clusterIPs[${idx}]` };
}

/** Parses a list of IPs (or CIDRs), keeping this family's, reporting invalid entries. */
function ipsOfFamily(
  values: readonly unknown[] | undefined,
  family: IPFamily,
  what: string,
  parse: (s: string) => { family: IPFamily; text: string } | undefined,
  problems: string[],
): readonly string[] {
  const out: string[] = [];
  (values ?? []).forEach((v, i) => {
    const parsed = typeof v === 'string' ? parse(v.trim()) : undefined;
    if (parsed === undefined) problems.push(`${what}[${i}] ${describeValue(v)} is not valid; ignored`);
    else if (parsed.family === family && !out.includes(parsed.text)) out.push(parsed.text);
  });
  return exactList(out);
}

// Most Services have no external IPs, source ranges or LB VIPs: one shared empty list instead of three per port.
const NO_STRINGS: readonly string[] = Object.freeze([]);

/** `list` at its final length (an array grown by push reserves 17 slots), or the shared empty list. */
function exactList(list: readonly string[]): readonly string[] {
  return list.length === 0 ? NO_STRINGS : list.slice();
}

/** Derives the service ports of `svc` for `family`. Never throws, whatever the object holds. */
export function servicePortsFromService(svc: Service, family: IPFamily): ServicePortsResult {
  try {
    return derive(svc as unknown, family);
  } catch (e) {
    // Only a hostile object (throwing getters, proxies) gets here; skip it rather than take the proxier down.
    return skip(`unreadable Service object: ${e instanceof Error ? e.message : describeValue(e)}`);
  }
}

function derive(svc: unknown, family: IPFamily): ServicePortsResult {
  if (!isRecord(svc)) return skip(`not an object: ${describeValue(svc)}`);
  const nn = objectName(svc);
  if (nn === undefined) return skip('metadata.namespace or metadata.name is missing');
  const labels = field(field(svc, 'metadata'), 'labels');
  // The label is a selection (upstream applies it in the informer's selector): a Service labelled after this
  // proxy had it leaves as a delete carrying the label, and the tracker removes what it had applied.
  if (isRecord(labels) && labels[LABEL_SERVICE_PROXY_NAME] !== undefined) {
    return skipRoutinely(`label ${LABEL_SERVICE_PROXY_NAME} is set (handled by another proxy)`);
  }
  const spec = field(svc, 'spec');
  if (!isRecord(spec)) return skip('spec is missing or not an object');

  // pkg/proxy/util ShouldSkipService: headless / no ClusterIP, then ExternalName.
  const clusterIPField = spec['clusterIP'];
  if (clusterIPField === undefined || clusterIPField === null || clusterIPField === '') {
    return skipRoutinely('spec.clusterIP is empty');
  }
  if (clusterIPField === 'None') return skipRoutinely('headless Service (spec.clusterIP "None")');
  if (typeof clusterIPField !== 'string')
    return skip(`invalid spec.clusterIP ${describeValue(clusterIPField)}`);
  const type = typeof spec['type'] === 'string' && spec['type'] !== '' ? spec['type'] : 'ClusterIP';
  if (type === 'ExternalName') return skipRoutinely('type ExternalName');

  const ipText = clusterIPTextFor(spec, family);
  if (ipText.text === '') return skipRoutinely(`no clusterIP of family ${family}`);
  const clusterIP = parseIPSloppy(ipText.text);
  if (clusterIP === undefined) return skip(`invalid ${ipText.field} ${describeValue(ipText.text)}`);
  if (clusterIP.family !== family) return skipRoutinely(`no clusterIP of family ${family}`);

  const problems: string[] = [];
  const sessionAffinityClientIP = spec['sessionAffinity'] === 'ClientIP';
  let stickyMaxAgeSeconds = 0;
  if (sessionAffinityClientIP) {
    const t = field(field(spec['sessionAffinityConfig'], 'clientIP'), 'timeoutSeconds');
    stickyMaxAgeSeconds =
      typeof t === 'number' && Number.isInteger(t) && t > 0 ? t : DEFAULT_CLIENT_IP_TIMEOUT_SECONDS;
  }

  const externalIPs = ipsOfFamily(
    arrayField(spec, 'externalIPs'),
    family,
    'spec.externalIPs',
    parseIPSloppy,
    problems,
  );
  const loadBalancerSourceRanges = ipsOfFamily(
    arrayField(spec, 'loadBalancerSourceRanges'),
    family,
    'spec.loadBalancerSourceRanges',
    parseCIDRSloppy,
    problems,
  );
  const vips: string[] = [];
  const ingress = arrayField(field(field(svc, 'status'), 'loadBalancer'), 'ingress') ?? [];
  ingress.forEach((ing, i) => {
    const ip = stringField(ing, 'ip');
    if (ip === undefined || ip === '') return; // hostname-only ingress
    // LoadBalancerIPMode is GA: "Proxy" means the LB delivers to the node itself, so no VIP rule is wanted.
    const mode = field(ing, 'ipMode');
    if (mode !== undefined && mode !== null && mode !== 'VIP') return;
    const parsed = parseIPSloppy(ip);
    if (parsed === undefined)
      problems.push(`status.loadBalancer.ingress[${i}].ip ${describeValue(ip)} is not valid`);
    else if (parsed.family === family && !vips.includes(parsed.text)) vips.push(parsed.text);
  });
  const loadBalancerVIPs = exactList(vips);

  // Type-based "externally accessible" (pkg/api/v1/service/util.go), unlike the per-family data-based check.
  const rawExternalIPs = arrayField(spec, 'externalIPs') ?? [];
  const typeExternallyAccessible =
    type === 'LoadBalancer' || type === 'NodePort' || (type === 'ClusterIP' && rawExternalIPs.length > 0);
  const externalPolicyLocal = typeExternallyAccessible && spec['externalTrafficPolicy'] === 'Local';
  const internalPolicyLocal = spec['internalTrafficPolicy'] === 'Local';
  let healthCheckNodePort = 0;
  if (type === 'LoadBalancer' && externalPolicyLocal) {
    const h = spec['healthCheckNodePort'];
    if (isPortNumber(h)) healthCheckNodePort = h;
    else problems.push(`spec.healthCheckNodePort ${describeValue(h)} is not a port; no health check server`);
  }

  const serviceName = namespacedNameString(nn);
  const rawPorts = spec['ports'];
  if (rawPorts !== undefined && rawPorts !== null && !Array.isArray(rawPorts)) {
    problems.push(`spec.ports is not a list: ${describeValue(rawPorts)}`);
  }
  const byKey = new Map<string, ServicePort>();
  (Array.isArray(rawPorts) ? (rawPorts as readonly unknown[]) : []).forEach((p, i) => {
    const at = `spec.ports[${i}]`;
    if (!isRecord(p)) return void problems.push(`${at} is not an object; dropped`);
    const portName = p['name'] === undefined || p['name'] === null ? '' : p['name'];
    if (typeof portName !== 'string')
      return void problems.push(`${at}.name ${describeValue(portName)} is not a string; dropped`);
    const rawProtocol = p['protocol'];
    const protocol =
      rawProtocol === undefined || rawProtocol === null || typeof rawProtocol === 'string'
        ? parseProtocol(rawProtocol)
        : undefined;
    if (protocol === undefined)
      return void problems.push(`${at}.protocol ${describeValue(rawProtocol)} is unknown; dropped`);
    const port = p['port'];
    if (!isPortNumber(port))
      return void problems.push(`${at}.port ${describeValue(port)} is not a port number; dropped`);
    let nodePort = 0;
    const np = p['nodePort'];
    if (np !== undefined && np !== null && np !== 0) {
      if (isPortNumber(np)) nodePort = np;
      else
        problems.push(
          `${at}.nodePort ${describeValue(np)} is not a port number; port kept without a NodePort`,
        );
    }
    const name: ServicePortName = { namespace: nn.namespace, name: nn.name, port: portName, protocol };
    const key = servicePortKey(name);
    if (byKey.has(key))
      problems.push(`${at} repeats port name ${describeValue(portName)}/${protocol}; the later one is used`);
    byKey.set(key, {
      key,
      name,
      nameString: servicePortNameString(name),
      serviceName,
      family,
      clusterIP: clusterIP.text,
      port,
      protocol,
      nodePort,
      sessionAffinityClientIP,
      stickyMaxAgeSeconds,
      externalIPs,
      loadBalancerSourceRanges,
      loadBalancerVIPs,
      healthCheckNodePort,
      externalPolicyLocal,
      internalPolicyLocal,
    });
  });
  return { ports: [...byKey.values()], problems };
}

/**
 * What the agent's store keeps of a Service (the reflector's `keep`, set by kube/watches.ts): its identity and
 * resourceVersion, nothing of its spec. The store's copy is read only as an update's `old` and as a delete found
 * by a relist, and the service tracker takes from those only the name: what the Service had is what its last
 * checkout applied (model/service-change-tracker.ts). Kept whole, at 100,000 Services the specs held ≈ 40 MiB
 * of the agent's heap (the bench's lean objects; an API server's carry selectors, targetPorts and status too).
 */
export function serviceRemnant(svc: Service): Service {
  if (!isRecord(svc)) return svc;
  const meta = field(svc, 'metadata');
  // A literal of one shape, raw values copied as they are.
  const metadata = {
    namespace: field(meta, 'namespace'),
    name: field(meta, 'name'),
    resourceVersion: field(meta, 'resourceVersion'),
  };
  return { metadata } as unknown as Service;
}

/** nodePort ≠ 0, or any LB VIP or externalIP of this family (data-based, per family). */
export function externallyAccessible(sp: ServicePort): boolean {
  return sp.nodePort !== 0 || sp.loadBalancerVIPs.length > 0 || sp.externalIPs.length > 0;
}

/** !internalPolicyLocal || externallyAccessible. */
export function usesClusterEndpoints(sp: ServicePort): boolean {
  return !sp.internalPolicyLocal || externallyAccessible(sp);
}

/** internalPolicyLocal || (externalPolicyLocal && externallyAccessible). */
export function usesLocalEndpoints(sp: ServicePort): boolean {
  return sp.internalPolicyLocal || (sp.externalPolicyLocal && externallyAccessible(sp));
}

/** "clusterIP:port/PROTO" (IPv6 bracketed). */
export function servicePortString(sp: ServicePort): string {
  const host = sp.clusterIP.includes(':') ? `[${sp.clusterIP}]` : sp.clusterIP;
  return `${host}:${sp.port}/${sp.protocol}`;
}
