// This project's own tests (not upstream's: their names start "[kube-proxy-ts]") of two UDP stale-entry bugs
// upstream fixed in its conntrack reconciler (pkg/proxy/conntrack/cleanup.go CleanStaleEntries):
// - kubernetes/kubernetes#139628, fixed by #139629: a UDP Service scaled to zero endpoints kept its flows DNATed
//   to the removed endpoint, since the reconciler skipped Services without serving endpoints; a sender that never
//   stops (statsd and the like) refreshes the 30 s UDP timeout with every packet, so the entry never expired.
//   Upstream now judges such a Service with an empty endpoint set: every flow to its frontends is stale.
// - kubernetes/kubernetes#141371: a deleted UDP Service kept its flows, since the reconciler builds its match set
//   from the service map and the Service is no longer in it; upstream now surfaces the deleted service ports from
//   the service map's update and judges them the same way (packets otherwise keep reaching the old endpoint IP).
// Each test keeps one flow alive from a client pod (source port 12345, a try a second), checks on the client's
// node that the flow is DNATed to the server, removes the endpoints (scale to zero) or the Service, and asserts
// that the node's table holds no entry for the frontend DNATed to the removed server after the proxy's sync (polled
// for conntrack.go's own minute), then that a new server (scaled back up / the Service recreated with the same
// ClusterIP and NodePort) answers the client within conntrack.go's minute. The NodePort variants send to the
// client's own node IP, so the DNAT and its entry are on the node whose table is read.
import type { ConntrackFlow } from '../../packages/agent/src/netfilter/conntrack/flow.js';
import {
  clientAndServerNodes,
  clientFlows,
  createHostExecPod,
  createUdpClientPod,
  describeFlow,
  failWithClientLogs,
  LOG_POLL_MS,
  LOG_TIMEOUT_MS,
  logContains,
  clientLogs,
  udpClientLoop,
} from './conntrack-udp.js';
import { fail, poll, POD_READY_BEFORE_TIMEOUT_MS } from './framework.js';
import { runServeHostnameReplicas, serviceSpec, TestJig } from './jig.js';
import { field, fieldArray, fieldString, type KubeObject } from './kube.js';
import type { PortedTest, UpstreamContext } from './registry-types.js';

const FILE = 'kube-proxy-ts';
const SERVER = 'udp-server';
const CLIENT = 'pod-client';
const HOST_EXEC = 'e2e-net-exec';

type Removal = 'scale-to-zero' | 'service-deleted';
type Kind = 'ClusterIP' | 'NodePort';

interface Frontend {
  readonly ip: string;
  readonly port: number;
}

/** The server Deployment's pods, live ones only: name → pod IP. */
async function serverPods(ctx: UpstreamContext): Promise<Map<string, string>> {
  const pods = await ctx.kube.list(ctx.namespace, 'pods', `name=${SERVER}`);
  return new Map(
    pods
      .filter((p) => field(p, 'metadata', 'deletionTimestamp') === undefined)
      .map((p) => [fieldString(p, 'metadata', 'name'), fieldString(p, 'status', 'podIP')]),
  );
}

function toFrontend(f: ConntrackFlow, fe: Frontend): boolean {
  return f.original.dst === fe.ip && f.original.dport === fe.port;
}

async function flowsToFrontend(ctx: UpstreamContext, fe: Frontend): Promise<ConntrackFlow[]> {
  return (await clientFlows(ctx, HOST_EXEC)).filter((f) => toFrontend(f, fe));
}

async function scaleServer(ctx: UpstreamContext, replicas: number): Promise<void> {
  await ctx.kube.mustRun(['-n', ctx.namespace, 'scale', 'deployment', SERVER, `--replicas=${replicas}`]);
}

async function run(ctx: UpstreamContext, kind: Kind, removal: Removal): Promise<void> {
  const { client } = clientAndServerNodes(ctx);
  const jig = new TestJig(ctx, 'svc-udp');
  ctx.step(`creating a UDP service svc-udp with type=${kind}`);
  const svc = await jig.createTCPService((s) => {
    const spec = serviceSpec(s);
    spec.type = kind;
    spec.ports = [{ port: 80, name: 'udp', protocol: 'UDP', targetPort: 80 }];
  });
  const clusterIP = fieldString(svc, 'spec', 'clusterIP');
  const nodePort = Number(field(fieldArray(svc, 'spec', 'ports')[0], 'nodePort') ?? 0);
  const fe: Frontend =
    kind === 'NodePort' ? { ip: client.internalIP, port: nodePort } : { ip: clusterIP, port: 80 };

  ctx.step(`creating the server Deployment ${SERVER} (netexec --udp-port=80), one replica`);
  const [first] = await runServeHostnameReplicas(ctx, SERVER, jig.labels, 1, [
    '/agnhost',
    'netexec',
    '--udp-port=80',
  ]);
  if (!first) fail(`no pod of ${SERVER}`);
  await jig.waitForAvailableEndpoint();
  const firstIP = (await serverPods(ctx)).get(first) ?? '';

  ctx.step(
    `creating a client pod on ${client.name} sending to ${fe.ip}:${fe.port} from port 12345 every second`,
  );
  await createUdpClientPod(ctx, CLIENT, client.name, udpClientLoop(fe.ip, fe.port, 1));
  if (!(await logContains(ctx, first, CLIENT)))
    await failWithClientLogs(ctx, CLIENT, `Failed to connect to ${first}`);

  ctx.step(`reading ${client.name}'s conntrack table from a hostNetwork pod on it`);
  await createHostExecPod(ctx, HOST_EXEC, client.name);
  const before = await flowsToFrontend(ctx, fe);
  ctx.log(`entries for ${fe.ip}:${fe.port}: ${before.map(describeFlow).join('; ') || 'none'}`);
  if (!before.some((f) => f.reply.src === firstIP))
    fail(`no conntrack entry on ${client.name} for ${fe.ip}:${fe.port} DNATed to ${first} (${firstIP})`);

  if (removal === 'scale-to-zero') {
    ctx.step(`scaling ${SERVER} to zero`);
    await scaleServer(ctx, 0);
    const gone = await poll(
      3_000,
      POD_READY_BEFORE_TIMEOUT_MS,
      async () => (await serverPods(ctx)).size === 0,
      ctx.signal,
    );
    if (!gone) fail(`pods of ${SERVER} still exist after scaling it to zero`);
  } else {
    ctx.step('deleting the Service svc-udp (its server pod stays)');
    await ctx.kube.delete(ctx.namespace, 'service', 'svc-udp');
  }

  ctx.step(`checking that no entry for ${fe.ip}:${fe.port} DNATed to ${firstIP} remains on ${client.name}`);
  let stale: ConntrackFlow[] = [];
  const cleaned = await poll(
    LOG_POLL_MS,
    LOG_TIMEOUT_MS,
    async () => {
      stale = (await flowsToFrontend(ctx, fe)).filter((f) => f.reply.src === firstIP);
      return stale.length === 0;
    },
    ctx.signal,
  );
  if (!cleaned) {
    ctx.log(`Pod client logs: ${await clientLogs(ctx, CLIENT)}`);
    fail(
      `conntrack entries on ${client.name} still DNAT ${fe.ip}:${fe.port} to the removed server ${firstIP} ` +
        `${LOG_TIMEOUT_MS / 1000}s after the ${removal === 'scale-to-zero' ? 'scale to zero' : 'Service deletion'}: ` +
        stale.map(describeFlow).join('; '),
    );
  }

  const mark = (await clientLogs(ctx, CLIENT)).length;
  let expected: string;
  if (removal === 'scale-to-zero') {
    ctx.step(`scaling ${SERVER} back to one replica`);
    await scaleServer(ctx, 1);
    let pods = new Map<string, string>();
    const up = await poll(
      3_000,
      POD_READY_BEFORE_TIMEOUT_MS,
      async () => {
        pods = await serverPods(ctx);
        return pods.size === 1 && [...pods.values()][0] !== '';
      },
      ctx.signal,
    );
    if (!up) fail(`${SERVER} did not come back with one pod`);
    expected = [...pods.keys()][0]!;
  } else {
    ctx.step('recreating the Service svc-udp with the same ClusterIP and NodePort');
    await ctx.kube.create(ctx.namespace, recreated(svc));
    expected = first;
  }
  await jig.waitForAvailableEndpoint();
  ctx.step(`checking the client reaches ${expected} again`);
  if (!(await logContains(ctx, expected, CLIENT, mark)))
    await failWithClientLogs(ctx, CLIENT, `Failed to connect to ${expected} after the new server came up`);
}

/** The Service as created, without what the API server set, keeping its ClusterIP and NodePort. */
function recreated(svc: KubeObject): KubeObject {
  const meta = svc.metadata as KubeObject;
  const spec = structuredClone(svc.spec) as KubeObject;
  delete spec.clusterIPs;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: meta.name, labels: meta.labels },
    spec,
  };
}

function staleTest(it: string, kind: Kind, removal: Removal): PortedTest {
  return {
    name: `[kube-proxy-ts] Conntrack ${it}`,
    conformance: false,
    file: FILE,
    run: (ctx) => run(ctx, kind, removal),
  };
}

export const CONNTRACK_STALE_TESTS: readonly PortedTest[] = [
  staleTest(
    'should delete UDP entries to a removed endpoint when a ClusterIP service scales to zero',
    'ClusterIP',
    'scale-to-zero',
  ),
  staleTest(
    'should delete UDP entries to a removed endpoint when a NodePort service scales to zero',
    'NodePort',
    'scale-to-zero',
  ),
  staleTest('should delete UDP entries of a deleted ClusterIP service', 'ClusterIP', 'service-deleted'),
  staleTest('should delete UDP entries of a deleted NodePort service', 'NodePort', 'service-deleted'),
];
