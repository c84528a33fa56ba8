// Runs ported tests against a cluster as ginkgo runs upstream's: each in a namespace of its own (named from
// upstream's base name, deleted afterwards), its deferred cleanups run last-first whatever happened, and a result
// per test with the failure's message and the test's log.
import { randomBytes } from 'node:crypto';
import { UpstreamSkip } from './framework.js';
import { field, fieldArray, fieldString, type Kube } from './kube.js';
import type {
  ClusterOffer,
  NodeView,
  NotPortedTest,
  PortedTest,
  Requirement,
  UpstreamContext,
} from './registry-types.js';

/** skipped: the cluster does not offer what the test requires (upstream's Skipf); neither passed nor failed. */
export type Outcome = 'passed' | 'failed' | 'not-ported' | 'skipped';

export interface TestResult {
  readonly name: string;
  readonly conformance: boolean;
  readonly file: string;
  /** The test's apiOnly: its outcome does not depend on the proxy. */
  readonly apiOnly?: boolean;
  readonly outcome: Outcome;
  readonly seconds?: number;
  /** failed: why; not-ported, skipped: the reason. */
  readonly message?: string;
  /** failed: the test's steps and log lines. */
  readonly log?: readonly string[];
}

export interface RunOptions {
  readonly signal: AbortSignal;
  /** How many tests run at once (ginkgo -p); [Serial] tests always run alone, after the others. Default 1. */
  readonly parallel?: number;
  /** Live progress (one line per step), e.g. to stderr; the report comes after. */
  readonly progress?: (line: string) => void;
  /** Restarts the API server (the runner's own lab); handed to the tests' context. */
  readonly restartApiServer?: () => Promise<void>;
}

/**
 * Whether a Pod with no tolerations may be scheduled on or keep running on the node: no taint with effect
 * NoSchedule or NoExecute (a test's Pods tolerate none; PreferNoSchedule only steers). Upstream's
 * isNodeUntainted, for the plain Pod e2enode.GetReadySchedulableNodes checks against.
 */
export function untainted(node: unknown): boolean {
  return !fieldArray(node, 'spec', 'taints').some((t) => {
    const effect = field(t, 'effect');
    return effect === 'NoSchedule' || effect === 'NoExecute';
  });
}

/** Ready, not cordoned, and untainted: where a test's Pods without tolerations can go. */
export function readySchedulable(node: unknown): boolean {
  return (
    field(node, 'spec', 'unschedulable') !== true &&
    untainted(node) &&
    fieldArray(node, 'status', 'conditions').some(
      (c) => field(c, 'type') === 'Ready' && field(c, 'status') === 'True',
    )
  );
}

/** The view of a Node the tests get: its name, InternalIPs, zone and whether it is a control-plane node. */
function nodeView(n: unknown): NodeView {
  const internalIPs = fieldArray(n, 'status', 'addresses')
    .filter((a) => field(a, 'type') === 'InternalIP')
    .map((a) => fieldString(a, 'address'));
  const zone = fieldString(n, 'metadata', 'labels', ZONE_LABEL);
  const controlPlane = field(n, 'metadata', 'labels', CONTROL_PLANE_LABEL) !== undefined;
  return {
    name: fieldString(n, 'metadata', 'name'),
    internalIP: internalIPs[0] ?? '',
    internalIPs,
    ...(zone !== '' ? { zone } : {}),
    ...(controlPlane ? { controlPlane } : {}),
  };
}

/**
 * e2enode.GetReadySchedulableNodes: Ready, not cordoned, without a NoSchedule or NoExecute taint (so a tainted
 * control-plane node is left out, as upstream leaves it out), by name, with their InternalIPs.
 */
export async function readySchedulableNodes(kube: Kube): Promise<NodeView[]> {
  const nodes = await kube.list('', 'nodes');
  return nodes
    .filter(readySchedulable)
    .map(nodeView)
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** v1.LabelTopologyZone. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

function isIPv6(address: string): boolean {
  return address.includes(':');
}

/**
 * What the cluster offers the tests' requirements: dual-stack when some node has InternalIPs of both families
 * and the Service ranges (the ServiceCIDR objects; where the cluster serves none, a server-side dry run of a
 * Service asking for RequireDualStack, which allocates without storing) cover both; zones from the nodes' labels.
 */
export async function clusterOffer(kube: Kube, nodes: readonly NodeView[]): Promise<ClusterOffer> {
  const nodesPerZone = new Map<string, number>();
  for (const n of nodes)
    if (n.zone !== undefined) nodesPerZone.set(n.zone, (nodesPerZone.get(n.zone) ?? 0) + 1);
  const dualNode = nodes.some((n) => {
    const ips = n.internalIPs ?? [n.internalIP];
    return ips.some(isIPv6) && ips.some((ip) => ip !== '' && !isIPv6(ip));
  });
  const workerZones = new Set(nodes.filter((n) => n.controlPlane !== true).flatMap((n) => n.zone ?? [])).size;
  return {
    dualStack: dualNode && (await dualStackServices(kube)),
    nodesPerZone,
    workerZones,
    schedulableControlPlane: nodes.some((n) => n.controlPlane === true),
    localhostNodePorts: await localhostNodePorts(kube),
  };
}

async function dualStackServices(kube: Kube): Promise<boolean> {
  const cidrs = await kube
    .list('', 'servicecidrs.networking.k8s.io')
    .then((items) => items.flatMap((c) => fieldArray(c, 'spec', 'cidrs').map(String)))
    .catch(() => undefined);
  if (cidrs !== undefined && cidrs.length > 0) return cidrs.some(isIPv6) && cidrs.some((c) => !isIPv6(c));
  const probe = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'dual-stack-probe' },
    spec: { ipFamilyPolicy: 'RequireDualStack', ports: [{ port: 80 }] },
  };
  const created = await kube
    .json(['-n', 'default', 'create', '--dry-run=server', '-f', '-'], JSON.stringify(probe))
    .catch(() => undefined);
  return fieldArray(created, 'spec', 'clusterIPs').length === 2;
}

/**
 * Whether the proxies serve NodePorts on localhost, from kube-system/kube-proxy's config.conf (kubeadm's layout,
 * the lab's too): `mode` iptables or unset (the Linux default) and `localhostNodePorts` not false. A cluster
 * without that ConfigMap counts as not.
 */
async function localhostNodePorts(kube: Kube): Promise<boolean> {
  const cm = await kube.get('kube-system', 'configmap', 'kube-proxy').catch(() => undefined);
  const conf = fieldString(cm, 'data', 'config.conf');
  if (conf === '') return false;
  const mode = /^mode:\s*"?([A-Za-z]*)"?\s*$/m.exec(conf)?.[1] ?? '';
  return (mode === '' || mode === 'iptables') && !/^\s+localhostNodePorts:\s*false\b/m.test(conf);
}

/** Why the cluster cannot run a test that requires `r`, or undefined when it can. */
function unmet(r: Requirement, offer: ClusterOffer): string | undefined {
  const zones = offer.nodesPerZone.size;
  switch (r) {
    case 'dual-stack':
      return offer.dualStack
        ? undefined
        : 'needs a dual-stack cluster (nodes and Service ranges of both IP families; `--ip-family dual`)';
    case 'zones':
      return zones >= 2
        ? undefined
        : `needs nodes in at least 2 zones, the cluster has ${zones} (\`--zones\`)`;
    case 'worker-zones':
      if (offer.schedulableControlPlane)
        return 'needs every schedulable node to be a worker: a pod on the (untainted) control-plane node is an endpoint in a zone topology-mode Auto does not weigh, so hints cannot be given as the test expects (a lab: `--control-plane-taint`, with `--nodes 3` or more for workers in 2 zones)';
      return offer.workerZones >= 2
        ? undefined
        : `needs worker nodes in at least 2 zones (topology-mode Auto weighs only those), the cluster has ${offer.workerZones}`;
    case 'localhost-nodeports':
      return offer.localhostNodePorts
        ? undefined
        : 'needs proxies that serve NodePorts on 127.0.0.1 ([Feature:LocalhostNodePorts]: iptables mode, localhostNodePorts on; kube-system/kube-proxy says otherwise)';
    case 'three-zones':
      return zones >= 3
        ? undefined
        : `needs nodes in at least 3 zones, the cluster has ${zones} (\`--nodes 3 --zones zone-a,zone-b,zone-c\`)`;
    case 'three-zones-of-two-nodes': {
      const big = [...offer.nodesPerZone.values()].filter((n) => n >= 2).length;
      return big >= 3
        ? undefined
        : `needs 3 zones with at least 2 schedulable nodes each, the cluster has ${big} (\`--nodes 6 --zones zone-a,zone-b,zone-c\`)`;
    }
  }
}

/** The reason the cluster cannot run `test` (its first unmet requirement), or undefined when it can. */
export function skipReason(test: PortedTest, offer: ClusterOffer): string | undefined {
  for (const r of test.requires ?? []) {
    const why = unmet(r, offer);
    if (why !== undefined) return why;
  }
  return undefined;
}

/**
 * framework.NewDefaultFramework("services"): a namespace named from the base and a random suffix; other files'
 * bases are their names with '-' for '_' (namespace names allow no '_').
 */
function namespaceFor(test: PortedTest): string {
  const file = test.file.replace(/\.go$/, '');
  const base = file === 'service' ? 'services' : file.replace(/_/g, '-');
  return `${base}-${randomBytes(2).toString('hex')}`;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

async function runCleanups(cleanups: (() => Promise<void>)[], log: (l: string) => void): Promise<string[]> {
  const errors: string[] = [];
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (e) {
      errors.push(messageOf(e));
      log(`cleanup failed: ${messageOf(e)}`);
    }
  }
  return errors;
}

/** One test in its own namespace: create it, run, clean up, delete the namespace (not waiting for it to go). */
export async function runOne(
  kube: Kube,
  test: PortedTest,
  nodes: readonly NodeView[],
  o: RunOptions,
): Promise<TestResult> {
  const started = Date.now();
  const lines: string[] = [];
  const log = (line: string): void => {
    lines.push(line);
    o.progress?.(`  ${namespace}: ${line}`);
  };
  const namespace = namespaceFor(test);
  const cleanups: (() => Promise<void>)[] = [];
  const ctx: UpstreamContext = {
    kube,
    namespace,
    nodes,
    signal: o.signal,
    log,
    step: (what) => log(`STEP: ${what}`),
    defer: (cleanup) => void cleanups.push(cleanup),
    ...(o.restartApiServer ? { restartApiServer: o.restartApiServer } : {}),
  };
  o.progress?.(`[It] ${test.name} (namespace ${namespace})`);
  let failure: string | undefined;
  let skipped: string | undefined;
  try {
    await kube.mustRun(['create', 'namespace', namespace]);
    await test.run(ctx);
  } catch (e) {
    if (e instanceof UpstreamSkip) {
      skipped = e.message;
      log(`SKIP: ${skipped}`);
    } else {
      failure = messageOf(e);
      log(`FAIL: ${failure}`);
    }
  }
  const cleanupErrors = await runCleanups(cleanups, log);
  if (failure === undefined && cleanupErrors.length > 0) failure = `cleanup: ${cleanupErrors.join('; ')}`;
  const deleted = await kube.run(['delete', 'namespace', namespace, '--wait=false']);
  if (deleted.code !== 0) log(`could not delete namespace ${namespace}: ${deleted.stderr.trim()}`);
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  const base = { ...identity(test), seconds };
  if (failure !== undefined) return { ...base, outcome: 'failed', message: failure, log: lines };
  return skipped === undefined
    ? { ...base, outcome: 'passed' }
    : { ...base, outcome: 'skipped', message: skipped };
}

/** What a result repeats of its test. */
function identity(t: PortedTest): Pick<TestResult, 'name' | 'conformance' | 'file' | 'apiOnly'> {
  return {
    name: t.name,
    conformance: t.conformance,
    file: t.file,
    ...(t.apiOnly === true ? { apiOnly: true } : {}),
  };
}

export async function runTests(
  kube: Kube,
  tests: readonly PortedTest[],
  o: RunOptions,
): Promise<TestResult[]> {
  const nodes = await readySchedulableNodes(kube);
  const byName = new Map<string, TestResult>();
  const offer = tests.some((t) => (t.requires ?? []).length > 0)
    ? await clusterOffer(kube, nodes)
    : undefined;
  const runnable = tests.filter((t) => {
    const why = offer === undefined ? undefined : skipReason(t, offer);
    if (why === undefined) return true;
    byName.set(t.name, { ...identity(t), outcome: 'skipped', message: why });
    o.progress?.(`[It] ${t.name}: skipped, ${why}`);
    return false;
  });
  const runAll = async (batch: readonly PortedTest[], width: number): Promise<void> => {
    const queue = [...batch];
    const worker = async (): Promise<void> => {
      for (let t = queue.shift(); t !== undefined && !o.signal.aborted; t = queue.shift()) {
        byName.set(t.name, await runOne(kube, t, nodes, o));
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(width, batch.length)) }, worker));
  };
  await runAll(
    runnable.filter((t) => t.serial !== true),
    o.parallel ?? 1,
  );
  await runAll(
    runnable.filter((t) => t.serial === true),
    1,
  );
  // The report keeps the registry's order, whatever order the tests finished in.
  return tests.flatMap((t) => byName.get(t.name) ?? []);
}

export function notPortedResults(tests: readonly NotPortedTest[]): TestResult[] {
  return tests.map((t) => ({
    name: t.name,
    conformance: t.conformance,
    file: t.file,
    outcome: 'not-ported',
    message: t.reason,
  }));
}
