// What conntrack.go's UDP tests, and this project's own stale-entry tests, do on the lab: a client pod that keeps one
// UDP flow alive (always from source port 12345, so every datagram refreshes the same conntrack entry), server pods
// pinned to a node, the client's log read for which server answered, and a node's conntrack table read from a
// hostNetwork pod on that node.
//
// Upstream's client runs `echo hostname | nc -u -w W -p 12345 HOST PORT` in a shell loop and nc prints the server's
// answer (agnhost netexec's UDP server answers "hostname" with its hostname; the lab's does the same,
// packages/netns/src/agnhost/netexec.ts netexecUdpAnswer). Lab pods run commands with the host's files, where nc is
// not installed; Node.js is (the lab itself runs on it), so one `node -e` per try does what nc does: bind source port
// 12345, send "hostname", print whatever comes back, exit after W seconds.
import {
  parseConntrackListing,
  type ConntrackFlow,
} from '../../packages/agent/src/netfilter/conntrack/flow.js';
import { fail, poll, skipf } from './framework.js';
import { field, fieldString, type KubeObject } from './kube.js';
import { AGNHOST_IMAGE, agnhostPod, podIsReady, podIsRunning, waitForPod } from './pods.js';
import type { NodeView, UpstreamContext } from './registry-types.js';
import { podLogs } from './topology-pods.js';

/** conntrack.go's srcPort. */
export const SRC_PORT = 12345;
/** conntrack.go's wait.PollUntilContextTimeout(ctx, 5*time.Second, time.Minute, …) on the client's log. */
export const LOG_POLL_MS = 5_000;
export const LOG_TIMEOUT_MS = 60_000;

/** The names and addresses here come from the API (IPs, DNS labels); refuse anything else in a command. */
function safeHost(host: string): string {
  if (!/^[A-Za-z0-9.:-]+$/.test(host)) throw new Error(`not a host name or address: ${host}`);
  return host;
}

/** One try of `echo hostname | nc -u -w WAIT -p 12345 HOST PORT`. */
export function udpTryCommand(host: string, port: number, waitSeconds: number): string {
  const js = [
    'const [h, p, w] = process.argv.slice(1);',
    'const s = require("dgram").createSocket(h.includes(":") ? "udp6" : "udp4");',
    's.on("message", (m) => process.stdout.write(m));',
    's.on("error", (e) => { console.error(e.message); process.exit(1); });',
    `s.bind(${SRC_PORT}, () => s.send("hostname\\n", Number(p), h));`,
    'setTimeout(() => process.exit(0), Number(w) * 1000);',
  ].join(' ');
  return `node -e '${js}' ${safeHost(host)} ${port} ${waitSeconds}`;
}

/** The client pod's loop, upstream's with the try above: `date; for i in $(seq 1 3000); do …; echo; done`. */
export function udpClientLoop(host: string, port: number, waitSeconds: number): string {
  return `date; for i in $(seq 1 3000); do echo "$(date) Try: \${i}"; ${udpTryCommand(host, port, waitSeconds)}; echo; done`;
}

/** BeforeEach: the first two ready schedulable nodes are the client's and the server's (upstream skips with fewer). */
export function clientAndServerNodes(ctx: UpstreamContext): { client: NodeView; server: NodeView } {
  const [client, server] = ctx.nodes;
  if (!client || !server)
    skipf(`Test requires >= 2 Ready nodes, but there are only ${ctx.nodes.length} nodes`);
  return { client, server };
}

/** e2epod.SetNodeSelection with a node name: a required node affinity on metadata.name. */
export function setNodeSelection(podSpec: KubeObject, nodeName: string): void {
  podSpec.affinity = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [nodeName] }] }],
      },
    },
  };
}

function podSpec(pod: KubeObject): KubeObject {
  return pod.spec as KubeObject;
}

function firstContainer(pod: KubeObject): KubeObject {
  return field(pod, 'spec', 'containers', 0) as KubeObject;
}

/** The client pod: e2epod.NewAgnhostPod(ns, podClient) with the loop as its command, on `node`; CreateSync. */
export async function createUdpClientPod(
  ctx: UpstreamContext,
  name: string,
  node: string,
  loop: string,
  hostNetwork = false,
): Promise<void> {
  const pod = agnhostPod({ name }, {}, [], []);
  const c = firstContainer(pod);
  delete c.args;
  c.command = ['/bin/sh', '-c', loop];
  c.name = name;
  setNodeSelection(podSpec(pod), node);
  if (hostNetwork) podSpec(pod).hostNetwork = true;
  await ctx.kube.create(ctx.namespace, pod);
  await waitForPod(ctx, name, 'ready', podIsReady);
}

/** A netexec UDP server on port 80 (`netexec --udp-port=80`) with `labels`, on `node`; CreateSync. */
export function udpServerPod(
  name: string,
  labels: Readonly<Record<string, string>>,
  node: string,
): KubeObject {
  const pod = agnhostPod({ name }, labels, [], ['netexec', '--udp-port=80']);
  setNodeSelection(podSpec(pod), node);
  return pod;
}

export async function createSync(ctx: UpstreamContext, pod: KubeObject): Promise<KubeObject> {
  await ctx.kube.create(ctx.namespace, pod);
  return waitForPod(ctx, fieldString(pod, 'metadata', 'name'), 'ready', podIsReady);
}

/** e2epod.GetPodLogs(ns, pod, pod): conntrack.go names each pod's one container after it. */
export function clientLogs(ctx: UpstreamContext, pod: string): Promise<string> {
  return podLogs(ctx, pod, pod);
}

/**
 * logContainsFn polled every 5 s for a minute: true once the pod's log (past `from` characters) contains `text`;
 * a failed read is retried, as upstream's.
 */
export function logContains(ctx: UpstreamContext, text: string, pod: string, from = 0): Promise<boolean> {
  return poll(
    LOG_POLL_MS,
    LOG_TIMEOUT_MS,
    async () => {
      try {
        return (await clientLogs(ctx, pod)).slice(from).includes(text);
      } catch {
        return false;
      }
    },
    ctx.signal,
  );
}

/** The failure upstream reports after a log poll timed out, with the client's log as it logs it. */
export async function failWithClientLogs(
  ctx: UpstreamContext,
  client: string,
  message: string,
): Promise<never> {
  ctx.log(`Pod client logs: ${await clientLogs(ctx, client)}`);
  fail(message);
}

/**
 * A privileged hostNetwork pod on `node` running `sleep 600` (kube_proxy.go's e2e-net-exec), to read that node's
 * conntrack table with `kubectl exec`: in the lab a hostNetwork pod runs in its node's network namespace.
 */
export async function createHostExecPod(ctx: UpstreamContext, name: string, node: string): Promise<void> {
  await ctx.kube.create(ctx.namespace, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: name } },
    spec: {
      hostNetwork: true,
      nodeName: node,
      containers: [
        {
          name,
          image: AGNHOST_IMAGE,
          command: ['sleep', '600'],
          securityContext: { privileged: true },
        },
      ],
      terminationGracePeriodSeconds: 0,
    },
  });
  await waitForPod(ctx, name, 'running', podIsRunning);
}

/** The node's UDP conntrack entries from source port 12345 (the client's flow), as the agent's parser reads them. */
export async function clientFlows(ctx: UpstreamContext, hostExecPod: string): Promise<ConntrackFlow[]> {
  const r = await ctx.kube.exec(
    ctx.namespace,
    hostExecPod,
    `conntrack -L -p udp --orig-port-src ${SRC_PORT} 2>/dev/null`,
  );
  if (r.code !== 0 && r.stdout.trim() === '') return [];
  return [...parseConntrackListing(r.stdout).flows];
}

export function describeFlow(f: ConntrackFlow): string {
  return `${f.original.src}:${f.original.sport} -> ${f.original.dst}:${f.original.dport} replied by ${f.reply.src}:${f.reply.sport}`;
}
