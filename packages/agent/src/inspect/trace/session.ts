// One trace, start to end: remove a trace table a crashed run left behind, add ours, read the kernel's trace
// events (`nft monitor trace`, or `xtables-monitor --trace` in iptables mode) until N packets were seen or the time is up, remove the table, and say what each
// packet's path means. It never sends a packet: it waits for real traffic.
//
// iptables mode: where the host's iptables is nft-based (iptables-nft), kube-proxy's chains are nf_tables chains
// and emit the same trace events, which `xtables-monitor --trace` prints in iptables' words (comments included);
// the legacy back end's rules are invisible to nftables tracing, and we say so instead of tracing half a path.
import type { CommandRunner, StreamHandle, StreamRunner } from '../../netfilter/command.js';
import { parseIptablesVersion } from '../../netfilter/iptables/variant.js';
import { XtablesTraceReader, parseTraceLine } from './events.js';
import type { TraceEvent } from './events.js';
import { mergeFrontendIndexes, readFrontendIndex, readIptablesIndex } from './frontends.js';
import type { FrontendIndex } from './frontends.js';
import { interpretPacket } from './interpret.js';
import type { ProxyMode } from '../../config/proxy-mode.js';
import type { PacketMeaning } from './interpret.js';
import { PacketAssembler } from './packets.js';
import type { TracedPacket } from './packets.js';
import { TRACE_TABLE, installTraceTable, nftFamily, removeTraceTables } from './table.js';
import type { TraceTableOptions } from './table.js';
import type { TraceTarget } from './target.js';

export interface TraceOptions extends TraceTableOptions {
  readonly target: TraceTarget;
  readonly mode: ProxyMode;
  readonly runner: CommandRunner;
  readonly streams: StreamRunner;
  /** Stop after this many traced packets (default 1). */
  readonly count?: number;
  readonly timeoutMs: number;
  /** Called once the monitor listens: traffic sent after this is traced (lab trace sends its request here). */
  readonly onReady?: () => void | Promise<void>;
  /** Ends the trace early (Ctrl-C). */
  readonly signal?: AbortSignal;
  /** How long to keep reading after the last packet, for its remaining events (default 300 ms). */
  readonly settleMs?: number;
  /** Frontends named by the cluster's Services (frontendsFromServicePorts), for what the table leaves unnamed. */
  readonly clusterFrontends?: FrontendIndex;
}

export interface TracedPacketReport extends PacketMeaning {
  readonly events: readonly TraceEvent[];
}

export interface TraceReport {
  readonly target: TraceTarget;
  readonly mode: ProxyMode;
  readonly packets: readonly TracedPacketReport[];
  /** Why the trace ended. */
  readonly ended: 'count' | 'timeout' | 'interrupted';
  /** Trace tables of an earlier run that were removed first. */
  readonly removedLeftovers: readonly string[];
  /** Lines of the monitor that were not trace events (its errors, mostly). */
  readonly unreadable: readonly string[];
}

/** Raised when tracing cannot work on this host, with the reason in words for the user. */
export class TraceUnavailableError extends Error {}

/** Whether iptables mode can be traced here: only when the host's iptables is the nf_tables back end. */
export async function iptablesTraceable(
  runner: CommandRunner,
  family: TraceTarget['family'],
): Promise<string | undefined> {
  const cmd = family === 'IPv6' ? 'ip6tables' : 'iptables';
  const r = await runner.run(cmd, ['--version']);
  const v = parseIptablesVersion(r.stdout + r.stderr);
  if (r.code !== 0 || !v)
    return `cannot tell which iptables this host runs (${cmd} --version: ${(r.stderr || r.stdout).trim()})`;
  if (v.backend === 'legacy')
    return (
      `${v.text.trim()} is the legacy back end: its rules live outside nf_tables, where the kernel's trace events ` +
      `cannot follow a packet. Trace works with iptables-nft (update-alternatives --set iptables ` +
      `/usr/sbin/iptables-nft, which kube-proxy then uses after a restart)`
    );
  return undefined;
}

const MONITOR_READY_MS = 400;

export async function runTrace(o: TraceOptions): Promise<TraceReport> {
  if (o.mode === 'iptables') {
    const why = await iptablesTraceable(o.runner, o.target.family);
    if (why) throw new TraceUnavailableError(`cannot trace in iptables mode here: ${why}`);
  }
  const want = o.count ?? 1;
  const removedLeftovers = await removeTraceTables(o.runner);
  const { index: tableIndex, owners } =
    o.mode === 'nftables'
      ? { index: await readFrontendIndex(o.runner, nftFamily(o.target)), owners: new Map<string, string>() }
      : await readIptablesIndex(o.runner, nftFamily(o.target));
  const index = o.clusterFrontends ? mergeFrontendIndexes(tableIndex, o.clusterFrontends) : tableIndex;
  const assembler = new PacketAssembler(TRACE_TABLE);
  const unreadable: string[] = [];
  let monitor: StreamHandle | undefined;
  let ended: TraceReport['ended'] = 'timeout';
  let finish: (why: TraceReport['ended']) => void = () => {};
  const done = new Promise<TraceReport['ended']>((resolve) => (finish = resolve));
  let settleTimer: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => finish('timeout'), o.timeoutMs);
  const onAbort = (): void => finish('interrupted');
  o.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    // The table goes in before the monitor starts: nft reads the ruleset once at start to print rules by their
    // text, and names a rule added later only by its handle.
    await installTraceTable(o.runner, o.target, o);
    // iptables mode reads xtables-monitor --trace, which prints kube-proxy's rules in iptables' own words (with
    // their comments); nftables mode, nft's own monitor.
    // (IPv4 only: xtables-monitor 1.8.9 exits with "unsupported layer 4 protocol value" on our ip6 marking
    // rule; nft's monitor shows the same IPv6 events, and iptables-save's comments still name the chains.)
    const xt = o.mode === 'iptables' && o.target.family === 'IPv4' ? new XtablesTraceReader() : undefined;
    const [cmd, ...args] = xt ? ['xtables-monitor', '--trace'] : ['nft', 'monitor', 'trace'];
    monitor = o.streams.stream(cmd ?? 'nft', args, (line) => {
      if (line.trim() === '') return;
      for (const r of xt ? xt.push(line) : [parseTraceLine(line)]) {
        if (!r.ok) {
          if (unreadable.length < 20) unreadable.push(line);
          continue;
        }
        assembler.add(r.event);
      }
      if (assembler.markedPackets().length >= want && settleTimer === undefined) {
        settleTimer = setTimeout(() => finish('count'), o.settleMs ?? 300);
      }
    });
    void monitor.exited.then((r) => {
      if (r.code !== 0 && r.code !== 128)
        unreadable.push(`${cmd ?? 'nft'} exited ${r.code}: ${r.stderr.trim()}`);
      finish(ended);
    });
    // The monitor subscribes to the kernel's trace group as it starts; a packet marked before that is lost.
    await new Promise((r) => setTimeout(r, MONITOR_READY_MS));
    if (o.signal?.aborted) finish('interrupted');
    else await o.onReady?.();
    ended = await done;
  } finally {
    clearTimeout(timer);
    if (settleTimer) clearTimeout(settleTimer);
    o.signal?.removeEventListener('abort', onAbort);
    // The table goes first, so that no packet is marked once nobody reads the events.
    await removeTraceTables(o.runner);
    await monitor?.stop();
  }
  const packets = assembler.markedPackets().slice(0, want);
  return {
    target: o.target,
    mode: o.mode,
    packets: packets.map((p: TracedPacket) => ({
      ...interpretPacket(p, { mode: o.mode, index, owners, traceTable: TRACE_TABLE }),
      events: p.events,
    })),
    ended,
    removedLeftovers,
    unreadable,
  };
}
