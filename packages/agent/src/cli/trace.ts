// `kube-proxy-ts trace --to DEST[:PORT][/tcp|/udp] [--from SRC] …`: parses flags, runs inspect/trace on this
// host's network namespace (as root, on the node), and prints each packet's path and what it means.
import { TABLE_NAME } from '../backends/nftables/naming.js';
import type { TraceReport } from '../inspect/trace/session.js';
import { runTrace, TraceUnavailableError } from '../inspect/trace/session.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import { formatTarget, parseTraceTarget } from '../inspect/trace/target.js';
import { TRACE_TABLE } from '../inspect/trace/table.js';
import { frontendsFromServicePorts } from '../inspect/trace/frontends.js';
import { CLUSTER_SOURCE_OPTIONS, loadGivenClusterObjects, servicePortsOf } from './cluster-objects.js';
import { choiceFlag, optionalChoiceFlag, REPORT_OUTPUTS } from './choice-flag.js';
import { OUTPUT_OPTION, processOutput, runCommand, UsageError } from './command-line.js';
import type { FlagValues } from './command-line.js';
import type { CommandRunner, StreamRunner } from '../netfilter/command.js';
import { hostCommandRunner, hostStreamRunner } from '../netfilter/command.js';
import { errorMessage } from '../util/error-message.js';

/** The modes trace reads: ipvs mode's path runs through IPVS, which the kernel's trace events do not show. */
const TRACE_MODES = ['iptables', 'nftables'] as const;

export const TRACE_USAGE = `Usage: kube-proxy-ts trace --to DEST[:PORT][/tcp|/udp|/sctp] [flags]

Run as root on a node (in the lab: inside the node's namespace, or use 'lab trace'). Adds a temporary nftables
table (${TRACE_TABLE}) that marks packets to DEST for the kernel's trace, waits for real packets (it never sends
any), prints each one's path through kube-proxy's rules (chain, rule, verdict) and what it means: the Service
port whose frontend matched, the endpoint it was sent to, whether it was masqueraded, or why it was rejected or
dropped. The table is removed at the end, on Ctrl-C, and (left by a crash) at the start of the next run.

Flags:
  --to DEST[:PORT][/PROTO]   destination to trace (IPv6 with a port: [ADDR]:PORT)
  --from SRC                 only packets from this source address or CIDR
  --count N                  stop after N packets (default 1)
  --timeout S                stop after S seconds (default 60)
  --all-packets              every matching packet, not only those that open a connection
  --proxy-mode MODE          nftables or iptables (default: nftables if table ip/ip6 ${TABLE_NAME} exists)
  -f, --filename FILE        name frontends from these Services too (the flat layout's table does not)
  --kubeconfig FILE          the same, read from the API server
  -o, --output text|json     output format (default text)
`;

export interface TraceIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly runner: CommandRunner;
  readonly streams: StreamRunner;
  readonly signal?: AbortSignal;
}

function defaultIO(): TraceIO {
  const abort = new AbortController();
  for (const s of ['SIGINT', 'SIGTERM'] as const) process.once(s, () => abort.abort());
  return {
    ...processOutput,
    runner: hostCommandRunner,
    streams: hostStreamRunner,
    signal: abort.signal,
  };
}

async function detectMode(runner: CommandRunner): Promise<ProxyMode> {
  for (const family of ['ip', 'ip6']) {
    if ((await runner.run('nft', ['list', 'table', family, TABLE_NAME])).code === 0) return 'nftables';
  }
  return 'iptables';
}

export function formatTraceReport(r: TraceReport): string {
  const lines: string[] = [
    `trace ${formatTarget(r.target)}${r.target.from !== undefined ? ` from ${r.target.from}` : ''} (${r.mode} mode): ` +
      `${r.packets.length} packet${r.packets.length === 1 ? '' : 's'}, ended by ${r.ended}`,
  ];
  for (const l of r.removedLeftovers) lines.push(`(removed a trace table left by an earlier run: ${l})`);
  r.packets.forEach((p, i) => {
    lines.push('', `packet ${i + 1}: ${p.packet}`);
    for (const s of p.path) {
      const verdict = s.verdict !== undefined ? `  → ${s.verdict}` : '';
      lines.push(
        s.kind === 'packet'
          ? `  ${s.table} ${s.chain}: enters`
          : `  ${s.table} ${s.chain}: ${s.kind === 'rule' ? s.text.trim() : s.kind}${verdict}`,
      );
    }
    lines.push('  means:');
    if (p.servicePort !== undefined) lines.push(`    Service port ${p.servicePort}`);
    if (p.frontend !== undefined) lines.push(`    frontend     ${p.frontend}`);
    if (p.endpoint !== undefined) lines.push(`    endpoint     ${p.endpoint}`);
    lines.push(`    outcome      ${p.outcome}`);
    for (const w of p.why) lines.push(`    - ${w}`);
  });
  if (r.packets.length === 0)
    lines.push('', 'no packet matched while tracing: send traffic to the destination while trace runs');
  for (const u of r.unreadable) lines.push(`(unreadable monitor line: ${u})`);
  return `${lines.join('\n')}\n`;
}

const TRACE_LINE = {
  name: 'trace',
  usage: TRACE_USAGE,
  options: {
    to: { type: 'string' },
    from: { type: 'string' },
    count: { type: 'string' },
    timeout: { type: 'string' },
    'all-packets': { type: 'boolean' },
    'proxy-mode': { type: 'string' },
    ...CLUSTER_SOURCE_OPTIONS,
    ...OUTPUT_OPTION,
  },
} as const;

export async function traceCommand(argv: readonly string[], io: TraceIO = defaultIO()): Promise<number> {
  return runCommand(TRACE_LINE, argv, io, ({ values }) => trace(values, io));
}

async function trace(values: FlagValues<typeof TRACE_LINE>, io: TraceIO): Promise<number> {
  if (values.to === undefined) throw new UsageError('--to is required');
  const parsed = parseTraceTarget(values.to, values.from);
  if (!parsed.ok) throw new UsageError(parsed.reason);
  const count = Number(values.count ?? '1');
  if (!Number.isInteger(count) || count < 1)
    throw new UsageError(`--count ${values.count ?? ''}: expected a positive integer`);
  const timeout = Number(values.timeout ?? '60');
  if (!Number.isFinite(timeout) || timeout <= 0)
    throw new UsageError(`--timeout ${values.timeout ?? ''}: expected seconds > 0`);
  const output = choiceFlag('-o', 'output format', REPORT_OUTPUTS, values.output, 'text');
  const modeFlag = optionalChoiceFlag('--proxy-mode', 'mode', TRACE_MODES, values['proxy-mode']);
  if (typeof process.getuid === 'function' && process.getuid() !== 0 && io.runner === hostCommandRunner) {
    io.stderr('trace: needs root (it adds an nftables table and reads the kernel’s trace events)\n');
    return 1;
  }
  const mode = modeFlag ?? (await detectMode(io.runner));
  const objects = await loadGivenClusterObjects(values, 'trace', { stderr: io.stderr });
  if (objects === 'failed') return 1;
  const clusterFrontends =
    objects && frontendsFromServicePorts(servicePortsOf(objects, parsed.target.family));
  try {
    const report = await runTrace({
      target: parsed.target,
      mode,
      runner: io.runner,
      streams: io.streams,
      count,
      timeoutMs: timeout * 1000,
      ...(values['all-packets'] ? { allPackets: true } : {}),
      ...(clusterFrontends ? { clusterFrontends } : {}),
      ...(io.signal ? { signal: io.signal } : {}),
      onReady: () => {
        if (output === 'text')
          io.stderr(
            `tracing ${formatTarget(parsed.target)} for up to ${timeout} s; send traffic now (Ctrl-C ends)\n`,
          );
      },
    });
    io.stdout(output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatTraceReport(report));
    return 0;
  } catch (e) {
    if (e instanceof TraceUnavailableError) {
      io.stderr(`trace: ${e.message}\n`);
      return 1;
    }
    io.stderr(`trace: ${errorMessage(e)}\n`);
    return 1;
  }
}
