// `kube-proxy-ts lab trace FROM TO`: `trace` in the lab, in one step. FROM is a pod (NAME or NS/NAME) or
// "client"; TO is web.svc, web.svc:80, http://web.svc/, IP:PORT, or NODE:NODEPORT (a node's name for its
// address). Names resolve as FROM resolves them (its /etc/hosts and the cluster DNS, through getent). The trace starts on every
// node (a packet from a pod enters its own node; a NodePort packet the node it is sent to; the others see nothing
// and are left out), then one HTTP request is sent from FROM, and each node's path is printed.
import { choiceFlag, REPORT_OUTPUTS } from 'kube-proxy-ts/cli/choice-flag.js';
import { processOutput, runCommand, UsageError } from 'kube-proxy-ts/cli/command-line.js';
import type { ParsedCommandLine } from 'kube-proxy-ts/cli/command-line.js';
import { runTrace } from 'kube-proxy-ts/inspect/trace/session.js';
import type { TraceReport } from 'kube-proxy-ts/inspect/trace/session.js';
import { parseTraceTarget } from 'kube-proxy-ts/inspect/trace/target.js';
import { labPaths } from '../cluster/layout.js';
import { layoutOf } from '../cluster/state.js';
import { readLabState, resolveTarget } from '../cluster/index.js';
import { parseIPSloppy } from 'kube-proxy-ts/model/ip.js';
import type { CommandRunner, StreamRunner } from 'kube-proxy-ts/netfilter/command.js';
import {
  hostCommandRunner,
  hostStreamRunner,
  netnsCommandRunner,
  netnsStreamRunner,
} from 'kube-proxy-ts/netfilter/command.js';
import { formatTraceReport } from 'kube-proxy-ts/cli/trace.js';
import { loadClusterObjects, servicePortsOf } from 'kube-proxy-ts/cli/cluster-objects.js';
import { frontendsFromServicePorts } from 'kube-proxy-ts/inspect/trace/frontends.js';

export const LAB_TRACE_USAGE = `Usage: kube-proxy-ts lab trace FROM TO [--timeout S] [-o text|json]

FROM: a pod (NAME or NAMESPACE/NAME) or "client" (the host outside the cluster).
TO:   web.svc, web.svc:80, http://web.svc/, IP:PORT, or NODE:NODEPORT (e.g. worker:30080).
Traces on every node, sends one HTTP request from FROM, and prints the path of its first packet on each node
that saw it: the Service port by frontend, the endpoint chosen, masquerading, or the reject or drop.
`;

export interface LabTraceDeps {
  readonly runner: CommandRunner;
  readonly streams: StreamRunner;
  readonly stateDir: string;
}

export interface LabTraceResult {
  readonly from: string;
  readonly to: string;
  readonly url: string;
  readonly request: { readonly ok: boolean; readonly answer: string };
  readonly nodes: readonly { readonly node: string; readonly report: TraceReport }[];
}

interface Destination {
  readonly host: string;
  readonly port: number;
}

/** Splits TO into a host and a port (80 unless given; 443 for https). */
export function parseDestination(to: string): Destination | string {
  let rest = to.trim();
  let port = 80;
  const url = /^(https?):\/\/([^/]+)(\/.*)?$/.exec(rest);
  if (url) {
    if (url[1] === 'https') port = 443;
    rest = url[2] ?? '';
  }
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  let host = rest;
  let portText: string | undefined;
  if (bracket) {
    host = bracket[1] ?? '';
    portText = bracket[2];
  } else if ((rest.match(/:/g) ?? []).length === 1) {
    [host = '', portText] = rest.split(':');
  }
  if (portText !== undefined) {
    port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) return `${to}: port ${portText} is not 1…65535`;
  }
  if (host === '') return `${to}: no host`;
  return { host, port };
}

/**
 * A name as FROM resolves it: its /etc/hosts, then the cluster DNS its resolv.conf names (getent asks both, in
 * nsswitch's order, inside FROM's namespace, where `ip netns exec` mounts the lab's files over /etc).
 */
async function lookUpHost(
  runner: CommandRunner,
  namespace: string,
  name: string,
): Promise<string | undefined> {
  const r = await runner.run('ip', ['netns', 'exec', namespace, 'getent', 'hosts', name]);
  if (r.code !== 0) return undefined;
  return r.stdout.trim().split(/\s+/)[0] || undefined;
}

export async function labTrace(
  from: string,
  to: string,
  options: { timeoutMs: number },
  deps: LabTraceDeps = { runner: hostCommandRunner, streams: hostStreamRunner, stateDir: '' },
): Promise<LabTraceResult> {
  const read = readLabState(labPaths(deps.stateDir).stateFile);
  if (!read.ok) throw new Error(read.missing ? 'no lab is up' : read.reason);
  const state = read.state;
  const layout = layoutOf(state);
  const source = await resolveTarget(deps.runner, state, from);
  if (!source.ok) throw new Error(`FROM ${from}: ${source.reason}`);
  if (layout.nodes.some((n) => n.namespace === source.namespace))
    throw new Error(
      `FROM ${from}: a node sends from its own namespace, which the trace hooks see as output; use a pod or "client"`,
    );
  const dest = parseDestination(to);
  if (typeof dest === 'string') throw new Error(`TO ${dest}`);
  const node = layout.nodes.find((n) => n.name === dest.host);
  const ip =
    parseIPSloppy(dest.host)?.text ??
    node?.ip ??
    (await lookUpHost(deps.runner, source.namespace, dest.host));
  if (ip === undefined)
    throw new Error(
      `TO ${to}: ${dest.host} is no IP, node (${layout.nodes.map((n) => n.name).join(', ')}) or name ${from} resolves (its /etc/hosts and cluster DNS)`,
    );
  const target = parseTraceTarget(`${ip.includes(':') ? `[${ip}]` : ip}:${dest.port}/tcp`);
  if (!target.ok) throw new Error(target.reason);
  const url = `http://${ip.includes(':') ? `[${ip}]` : ip}:${dest.port}/`;

  // The lab's API names every frontend, also where the table does not (the flat layout).
  const objects = await loadClusterObjects({ kubeconfig: labPaths(deps.stateDir).kubeconfig }, 'lab trace', {
    stderr: () => {},
  });
  const clusterFrontends =
    typeof objects === 'string'
      ? undefined
      : frontendsFromServicePorts(servicePortsOf(objects, target.target.family));
  const abort = new AbortController();
  const ready: Promise<void>[] = [];
  const traces = layout.nodes.map((n) => {
    let markReady: () => void = () => {};
    ready.push(new Promise<void>((resolve) => (markReady = resolve)));
    return runTrace({
      target: target.target,
      mode: state.mode,
      runner: netnsCommandRunner(n.namespace, deps.runner),
      streams: netnsStreamRunner(n.namespace, deps.streams),
      count: 1,
      timeoutMs: options.timeoutMs,
      signal: abort.signal,
      onReady: () => markReady(),
      ...(clusterFrontends ? { clusterFrontends } : {}),
    })
      .then((report) => ({ node: n.name, report }))
      .finally(() => markReady());
  });
  let request: LabTraceResult['request'];
  try {
    await Promise.all(ready);
    const r = await deps.runner.run('ip', ['netns', 'exec', source.namespace, 'curl', '-s', '-m', '3', url]);
    request = {
      ok: r.code === 0,
      answer: r.code === 0 ? r.stdout.trim() : `curl exit ${r.code}${r.stderr ? `: ${r.stderr.trim()}` : ''}`,
    };
    // The first packet's events arrive within milliseconds; nodes it never reached stop here.
    await new Promise((r2) => setTimeout(r2, 1000));
  } finally {
    abort.abort();
  }
  const reports = await Promise.all(traces);
  return { from, to, url, request, nodes: reports.filter((r) => r.report.packets.length > 0) };
}

export function formatLabTrace(r: LabTraceResult): string {
  const lines = [
    `${r.from} → ${r.to} (${r.url}): ${r.request.ok ? `answered: ${r.request.answer}` : `no answer (${r.request.answer})`}`,
  ];
  if (r.nodes.length === 0)
    lines.push('no node saw the packet (is TO a Service, a NodePort or a pod behind a node?)');
  for (const n of r.nodes) lines.push('', `== node ${n.node}`, formatTraceReport(n.report).trimEnd());
  return `${lines.join('\n')}\n`;
}

const LAB_TRACE_LINE = {
  name: 'lab trace',
  usage: LAB_TRACE_USAGE,
  positionals: true,
  options: {
    'state-dir': { type: 'string' },
    timeout: { type: 'string' },
    output: { type: 'string', short: 'o' },
  },
} as const;

/** `lab trace` as lab.ts dispatches it. */
export async function labTraceCommand(argv: readonly string[], defaultStateDir: string): Promise<number> {
  return runCommand(LAB_TRACE_LINE, argv, processOutput, (parsed) => labTraceMain(parsed, defaultStateDir));
}

async function labTraceMain(
  { values, positionals }: ParsedCommandLine<typeof LAB_TRACE_LINE.options>,
  defaultStateDir: string,
): Promise<number> {
  const [from, to, ...extra] = positionals;
  if (from === undefined || to === undefined || extra.length > 0)
    throw new UsageError('expected FROM TO [--timeout S] [-o text|json]');
  const output = choiceFlag('-o', 'output format', REPORT_OUTPUTS, values.output, 'text');
  const timeout = Number(values.timeout ?? '20');
  if (!(timeout > 0))
    throw new UsageError(`--timeout ${JSON.stringify(values.timeout)}: expected seconds > 0`);
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    process.stderr.write('lab trace: needs root, as `lab up` did\n');
    return 1;
  }
  try {
    const r = await labTrace(
      from,
      to,
      { timeoutMs: timeout * 1000 },
      {
        runner: hostCommandRunner,
        streams: hostStreamRunner,
        stateDir: values['state-dir'] ?? defaultStateDir,
      },
    );
    process.stdout.write(output === 'json' ? `${JSON.stringify(r, null, 2)}\n` : formatLabTrace(r));
    return 0;
  } catch (e) {
    process.stderr.write(`lab trace: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}
