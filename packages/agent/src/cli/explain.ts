// `kube-proxy-ts explain service NAME -n NAMESPACE …`: for every node (or the one named) and every port of the
// Service, the frontends, the endpoints used for ClusterIP and external traffic with each one left out and why,
// what a packet meets without an endpoint, masquerading, affinity and the kernel objects. The cluster's state
// comes from a live API server or from -f FILE; the node's settings from render's flags or --config.
import { choiceFlag, REPORT_OUTPUTS } from './choice-flag.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import { PROXY_MODES } from '../config/proxy-mode.js';
import { loadProxyConfig } from '../config/load.js';
import type { ProxyConfig } from '../config/proxy-config.js';
import { explainNode } from '../inspect/explain.js';
import type { NodeExplanation, PortExplanation, TrafficExplanation } from '../inspect/explain.js';
import { checkProgrammed, liveKernelReader } from '../inspect/programmed.js';
import type { KernelReader, ProgrammedObject } from '../inspect/programmed.js';
import { hostCommandRunner } from '../netfilter/command.js';
import type { FeatureGates } from '../model/feature-gates.js';
import { snapshotFromObjects } from '../sync/snapshot.js';
import { CLUSTER_SOURCE_OPTIONS, loadClusterObjects, processFileIO } from './cluster-objects.js';
import type { FileCommandIO } from './cluster-objects.js';
import { NODE_FLAGS_USAGE, NODE_OPTIONS, nodeSettings } from './node-options.js';
import { OUTPUT_OPTION, runCommand, UsageError } from './command-line.js';
import type { ParsedCommandLine } from './command-line.js';
import type { NodeFlagValues } from './node-options.js';

export const EXPLAIN_USAGE = `Usage: kube-proxy-ts explain service NAME -n NAMESPACE [flags]

For every node (or the one named with --node) and every port of the Service: its frontends (ClusterIP, NodePort,
external IPs, load-balancer IPs, source ranges); for ClusterIP traffic and for external traffic the traffic
policy, the endpoints used, and each endpoint left out with why; what happens with no usable endpoint; who is
masqueraded; session affinity; and the kernel objects that implement the port in the node's proxy mode. The
reasons come from the decision the proxy itself makes, not from a second copy of it.

The cluster's state is read from -f FILE (as render reads it, Nodes included), else from the API server
(--kubeconfig, else $KUBECONFIG, else in-cluster).

Flags:
  -n, --namespace NS             the Service's namespace (default "default")
  --node NODE                    only this node (default: every Node in the state)
  --from-ip IP                   also say what happens to traffic from this source address
  --programmed                   run on the node itself (as root, in its network namespace): look each kernel
                                 object up in the live table and say present, missing or different
  -o, --output text|json         output format (default text)
  -f, --filename FILE            read the state from FILE instead of the API server ("-" for stdin)
  --kubeconfig FILE              kubeconfig for the API server
  --config FILE                  a KubeProxyConfiguration: mode, cluster CIDR, local detection, NodePort addresses,
                                 masquerading and feature gates from it (flags below win)
  --proxy-mode MODE              nftables (default) or iptables: which kernel objects to name
  --hostname-override NAME       the node name when the state has no Node objects
${NODE_FLAGS_USAGE}`;

export interface ExplainIO extends FileCommandIO {
  readonly env: Readonly<Record<string, string | undefined>>;
}

const defaultIO: ExplainIO = { ...processFileIO, env: process.env };

/** Thrown for a problem with the input (not the command line): printed, exit 1. */
class InputError extends Error {}

export async function explainCommand(argv: readonly string[], io: ExplainIO = defaultIO): Promise<number> {
  return runCommand(EXPLAIN_LINE, argv, io, (parsed) => explain(parsed, io));
}

/** Flag values from a KubeProxyConfiguration, for the flags that were not given. */
function flagsFromConfig(cfg: ProxyConfig): NodeFlagValues & { 'proxy-mode': string } {
  return {
    'proxy-mode': cfg.mode,
    'detect-local-mode': cfg.detectLocalMode,
    ...(cfg.detectLocal.clusterCIDRs.length > 0
      ? { 'cluster-cidr': cfg.detectLocal.clusterCIDRs.join(',') }
      : {}),
    ...(cfg.detectLocal.bridgeInterface !== ''
      ? { 'pod-bridge-interface': cfg.detectLocal.bridgeInterface }
      : {}),
    ...(cfg.detectLocal.interfaceNamePrefix !== ''
      ? { 'pod-interface-name-prefix': cfg.detectLocal.interfaceNamePrefix }
      : {}),
    ...(cfg.nodePortAddresses.length > 0 ? { 'nodeport-addresses': cfg.nodePortAddresses.join(',') } : {}),
    'masquerade-all': cfg.masqueradeAll,
    'masquerade-bit': String(cfg.masqueradeBit),
    'iptables-localhost-nodeports': String(cfg.iptables.localhostNodePorts),
  };
}

const EXPLAIN_LINE = {
  name: 'explain',
  usage: EXPLAIN_USAGE,
  positionals: true,
  options: {
    namespace: { type: 'string', short: 'n', default: 'default' },
    node: { type: 'string' },
    'from-ip': { type: 'string' },
    ...OUTPUT_OPTION,
    ...CLUSTER_SOURCE_OPTIONS,
    config: { type: 'string' },
    'proxy-mode': { type: 'string' },
    programmed: { type: 'boolean', default: false },
    ...NODE_OPTIONS,
  },
  inputError: InputError,
} as const;

async function explain(
  { values, positionals, tokens }: ParsedCommandLine<typeof EXPLAIN_LINE.options>,
  io: ExplainIO,
): Promise<number> {
  const [kind, name, ...extra] = positionals;
  if (kind === undefined)
    throw new UsageError('what to explain is missing: explain service NAME -n NAMESPACE');
  if (kind !== 'service' && kind !== 'svc' && kind !== 'services')
    throw new UsageError(`only Services can be explained, not ${JSON.stringify(kind)}`);
  if (name === undefined || name === '') throw new UsageError('the Service name is missing');
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  const output = choiceFlag('--output', 'output format', REPORT_OUTPUTS, values.output, 'text');

  // Flags given on the command line win over --config.
  const given = new Set<string>(tokens.filter((t) => t.kind === 'option').map((t) => t.name));
  let flagValues: NodeFlagValues & { 'proxy-mode'?: string } = values;
  let featureGates: FeatureGates | undefined;
  if (values.config !== undefined) {
    const loaded = loadProxyConfig(['--config', values.config], {
      readFile: io.readFile,
      hostname: io.hostname,
    });
    if (!loaded.ok) {
      throw new InputError(
        `--config ${values.config}: ${loaded.errors.map((p) => `${p.field}: ${p.message}`).join('; ')}`,
      );
    }
    const fromConfig = flagsFromConfig(loaded.config);
    const merged: Record<string, unknown> = { ...fromConfig };
    for (const [k, v] of Object.entries(values)) if (given.has(k)) merged[k] = v;
    flagValues = merged as NodeFlagValues & { 'proxy-mode'?: string };
    featureGates = loaded.config.gates;
  }
  const mode = choiceFlag('--proxy-mode', 'mode', PROXY_MODES, flagValues['proxy-mode'], 'nftables');

  const state = await loadClusterObjects(values, 'explain', io);
  if (typeof state === 'string') throw new InputError(state);
  const namespace = values.namespace;
  const service = `${namespace}/${name}`;
  if (!state.services.some((s) => s.metadata?.namespace === namespace && s.metadata?.name === name)) {
    const namespaces = new Set(state.services.map((s) => s.metadata?.namespace));
    throw new InputError(
      namespaces.has(namespace)
        ? `Service ${JSON.stringify(name)} not found in namespace ${JSON.stringify(namespace)}`
        : `namespace ${JSON.stringify(namespace)} has no Services (Service ${JSON.stringify(name)} not found)`,
    );
  }

  let nodeNames = state.nodes
    .map((n) => n.metadata.name)
    .filter((n): n is string => typeof n === 'string')
    .sort();
  if (values.node !== undefined) {
    if (state.nodes.length > 0 && !nodeNames.includes(values.node))
      throw new InputError(`node ${JSON.stringify(values.node)} not found (nodes: ${nodeNames.join(', ')})`);
    nodeNames = [values.node];
  } else if (nodeNames.length === 0) {
    nodeNames = [(values['hostname-override'] ?? io.hostname()).trim().toLowerCase()];
  }

  if (values.programmed && nodeNames.length !== 1)
    throw new UsageError(`--programmed reads this host's tables: name the node it runs on with --node`);

  const explained: Shown[] = [];
  for (const nodeName of nodeNames) {
    const settings = nodeSettings(flagValues, mode as ProxyMode, nodeName, state.nodes);
    for (const p of settings.problems) io.stderr(`explain: node ${nodeName}: ${p}\n`);
    const { snapshot } = snapshotFromObjects({
      family: settings.family,
      nodeName,
      services: state.services,
      endpointSlices: state.endpointSlices,
      node: settings.node,
      ...(featureGates !== undefined ? { featureGates } : {}),
    });
    const n = explainNode({
      mode: mode as ProxyMode,
      node: settings.config,
      iptables: settings.iptables,
      snapshot,
      service,
      ...(featureGates !== undefined ? { featureGates } : {}),
      ...(values['from-ip'] !== undefined ? { fromIP: values['from-ip'] } : {}),
    });
    const kernel = values.programmed ? liveKernelReader(settings.family, hostCommandRunner) : undefined;
    explained.push(await shown(n, kernel));
  }
  if (explained.every((n) => n.ports.length === 0)) {
    io.stderr(
      `explain: Service ${service} has no port this proxy handles (headless, ExternalName, or no ClusterIP of the node's family)\n`,
    );
  }
  io.stdout(
    output === 'json' ? JSON.stringify({ service, nodes: explained }, null, 2) + '\n' : text(explained),
  );
  return 0;
}

/** A port as printed: its kernel objects without their lookup keys, and what the live table holds of them. */
type ShownPort = Omit<PortExplanation, 'objects'> & {
  readonly objects: readonly { readonly object: string; readonly table?: string }[];
  readonly programmed?: readonly ProgrammedObject[];
};
type Shown = Omit<NodeExplanation, 'ports'> & { readonly ports: readonly ShownPort[] };

async function shown(n: NodeExplanation, kernel: KernelReader | undefined): Promise<Shown> {
  const ports: ShownPort[] = [];
  for (const p of n.ports) {
    const objects = p.objects.map((o) =>
      o.table !== undefined ? { object: o.object, table: o.table } : { object: o.object },
    );
    let programmed: ProgrammedObject[] | undefined;
    if (kernel !== undefined) {
      try {
        programmed = await checkProgrammed(p.objects, kernel);
      } catch (e) {
        throw new InputError(`reading the live ${n.mode} table: ${(e as Error).message}`);
      }
    }
    ports.push({ ...p, objects, ...(programmed !== undefined ? { programmed } : {}) });
  }
  return { ...n, ports };
}

function trafficText(out: string[], title: string, t: TrafficExplanation): void {
  const used = t.endpoints.length === 0 ? 'none' : t.endpoints.join(', ');
  out.push(`    ${title}: policy ${t.policy}; endpoints: ${used}`);
  for (const x of t.excluded) out.push(`      not ${x.endpoint}: ${x.reason}`);
  for (const n of t.notes) out.push(`      note: ${n}`);
  if (t.noEndpoints !== undefined)
    out.push(`      no endpoint: ${t.noEndpoints.verdict}: ${t.noEndpoints.why}`);
}

function portText(out: string[], p: ShownPort): void {
  out.push(`  ${p.servicePort} (${p.protocol})`);
  const f = p.frontends;
  const fronts = [`ClusterIP ${f.clusterIP}`];
  if (f.nodePort !== undefined) {
    const where = f.nodePort.addresses === 'all' ? 'every local address' : f.nodePort.addresses.join(', ');
    fronts.push(`NodePort ${f.nodePort.port} on ${where}`);
  }
  if (f.externalIPs.length > 0) fronts.push(`external IPs ${f.externalIPs.join(', ')}`);
  if (f.loadBalancerIPs.length > 0) fronts.push(`load-balancer IPs ${f.loadBalancerIPs.join(', ')}`);
  if (f.sourceRanges.length > 0) fronts.push(`source ranges ${f.sourceRanges.join(', ')}`);
  out.push(`    frontends: ${fronts.join('; ')}`);
  trafficText(out, 'ClusterIP traffic', p.internal);
  if (p.external !== undefined) trafficText(out, 'external traffic', p.external);
  const m = p.masquerade;
  out.push(
    `    masquerade, ClusterIP: from a pod: ${m.clusterIP.fromPod}; from the node: ${m.clusterIP.fromNode}; ` +
      `from outside: ${m.clusterIP.fromOutside}`,
  );
  if (m.external !== undefined) {
    out.push(
      `    masquerade, external: from a pod: ${m.external.fromPod}; from the node: ${m.external.fromNode}; ` +
        `from outside: ${m.external.fromOutside}`,
    );
  }
  if (m.fromIP !== undefined) {
    const ext = m.fromIP.external !== undefined ? `; external: ${m.fromIP.external}` : '';
    out.push(`    from ${m.fromIP.ip} (taken for ${m.fromIP.is}): ClusterIP: ${m.fromIP.clusterIP}${ext}`);
  }
  out.push(
    `    affinity: ${p.affinity.mode === 'ClientIP' ? `ClientIP, ${p.affinity.timeoutSeconds ?? 0} s` : 'none'}`,
  );
  out.push(`    kernel objects:`);
  p.objects.forEach((o, i) => {
    const table = o.table !== undefined ? `[${o.table}] ` : '';
    const state = p.programmed?.[i];
    const mark =
      state === undefined
        ? ''
        : `${state.state}${state.difference !== undefined ? ` (${state.difference})` : ''}: `;
    const [first, ...rest] = o.object.split('\n');
    out.push(`      ${mark}${table}${first ?? ''}`);
    for (const line of rest) out.push(`        ${line}`);
  });
}

function text(nodes: readonly Shown[]): string {
  const out: string[] = [];
  for (const n of nodes) {
    const zone = n.zone !== undefined ? `, zone ${n.zone}` : '';
    out.push(`node ${n.node}${zone} (${n.mode}, ${n.family})`);
    for (const p of n.ports) portText(out, p);
  }
  return out.join('\n') + '\n';
}
