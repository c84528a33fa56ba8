// `kube-proxy-ts diff -f BEFORE -f AFTER`: what this node's proxy would write to go from BEFORE's cluster state to
// AFTER's, per backend, beside the size of the whole ruleset. This file only parses, loads and formats; the diff is
// src/inspect/diff.ts, which runs the real trackers and backends on their fakes.
import { choiceFlag, REPORT_OUTPUTS } from './choice-flag.js';
import { performance } from 'node:perf_hooks';
import type { Node } from '../api/objects.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import type {
  BackendDiff,
  ClusterState,
  DiffResult,
  DiffTarget,
  EventCounts,
  ObjectKind,
} from '../inspect/diff.js';
import { diffClusterStates } from '../inspect/diff.js';
import type { ManifestObjects } from '../kube/manifests.js';
import type { IPFamily } from '../model/ip.js';
import { loadManifestFile } from '../kube/manifest-file.js';
import { BackendSyncError } from '../sync/backend.js';
import { NODE_FLAGS_USAGE, NODE_OPTIONS, checkNodeFlags, nodeSettings } from './node-options.js';
import type { NodeSettings } from './node-options.js';
import { OUTPUT_OPTION, runCommand, UsageError } from './command-line.js';
import type { FlagValues } from './command-line.js';
import { processFileIO } from './cluster-objects.js';
import type { FileCommandIO } from './cluster-objects.js';

export const DIFF_USAGE = `Usage: kube-proxy-ts diff -f BEFORE -f AFTER [flags]

Prints what this node's proxy would write to go from BEFORE's cluster state to AFTER's: for nftables the
partial-sync transaction, for iptables the partial iptables-restore input, for ipvs the changes to kube-ipvs0
(ip -batch), the ipsets (ipset restore), IPVS (as ipvsadm lines) and the iptables glue, each with its size
(operations, lines) beside the size of the whole ruleset (a fresh node's full sync of AFTER). The proxy's own change trackers and
backends compute it, on in-memory tables: nothing is applied. BEFORE and AFTER are read as render reads -f
(JSON: one object, a List or one object after another; or multi-document YAML; "-" reads stdin, for one of them).
AFTER's objects reach the proxy as its informers would deliver them: adds, updates and deletes by kind, namespace
and name.

Flags:
  -f, --filename FILE            BEFORE, then AFTER (both required)
  --proxy-mode MODE              nftables, iptables, ipvs, or both (default: nftables and iptables)
  -o, --output FORMAT            text (default) or json (nftables.operations, iptables.lines,
                                 ipvs.operations, .text, .total)
  --hostname-override NAME       this node's name (default: AFTER's only Node, else the host name)
${NODE_FLAGS_USAGE}`;

/** `both` is the two rule-based modes; ipvs is diffed when asked for by name. */
const DIFF_MODES = ['iptables', 'nftables', 'ipvs', 'both'] as const;

export interface DiffIO extends FileCommandIO {
  /** Monotonic milliseconds (default performance.now): when reading is slow, progress goes to stderr. */
  readonly now?: () => number;
}

export const defaultDiffIO: DiffIO = processFileIO;

const DIFF_LINE = {
  name: 'diff',
  usage: DIFF_USAGE,
  options: {
    filename: { type: 'string', short: 'f', multiple: true },
    'proxy-mode': { type: 'string', default: 'both' },
    ...OUTPUT_OPTION,
    ...NODE_OPTIONS,
  },
  // The fake refused what the backend sent: the kernel would refuse it too. Say so rather than print a stack.
  inputError: BackendSyncError,
} as const;

/** Runs the diff command; resolves to the exit code (2: usage, 1: bad input). */
export async function diffCommand(argv: readonly string[], io: DiffIO = defaultDiffIO): Promise<number> {
  return runCommand(DIFF_LINE, argv, io, ({ values }) => diff(values, io));
}

async function diff(values: FlagValues<typeof DIFF_LINE>, io: DiffIO): Promise<number> {
  const mode = choiceFlag('--proxy-mode', 'mode', DIFF_MODES, values['proxy-mode'], 'both');
  const output = choiceFlag('-o', 'output format', REPORT_OUTPUTS, values.output, 'text');
  checkNodeFlags(values);
  const files = values.filename ?? [];
  if (files.length !== 2) {
    throw new UsageError(
      `-f BEFORE -f AFTER: two files are required, got ${files.length === 0 ? 'none' : files.length}`,
    );
  }
  const [beforePath, afterPath] = files as [string, string];
  if (beforePath === '-' && afterPath === '-')
    throw new UsageError('-f: only one of BEFORE and AFTER can be stdin');

  const before = load(beforePath, io);
  if (before === undefined) return 1;
  const after = load(afterPath, io);
  if (after === undefined) return 1;

  const nodeName = (values['hostname-override'] ?? soleNodeName(after.nodes) ?? io.hostname())
    .trim()
    .toLowerCase();
  const modes: readonly ProxyMode[] = mode === 'both' ? ['nftables', 'iptables'] : [mode];
  const targets: DiffTarget[] = [];
  const problems = new Set<string>();
  let family: IPFamily = 'IPv4';
  for (const m of modes) {
    // Per mode: the NodePort addresses' default differs between them.
    const settings = nodeSettings(values, m, nodeName, after.nodes);
    for (const p of settings.problems) problems.add(p);
    family = settings.family;
    targets.push(diffTarget(m, settings));
  }
  for (const p of problems) io.stderr(`diff: ${p}\n`);

  const result = await diffClusterStates({
    before: stateOf(before, nodeName),
    after: stateOf(after, nodeName),
    family,
    nodeName,
    targets,
  });
  for (const s of result.skipped) io.stderr(`diff: skipped ${s.kind} ${s.name}: ${s.reason}\n`);
  io.stdout(output === 'json' ? formatJSON(nodeName, result) : formatText(result));
  return 0;
}

/** A mode's target: ipvs with render's options (the default scheduler, no excluded CIDRs). */
function diffTarget(mode: ProxyMode, settings: NodeSettings): DiffTarget {
  if (mode === 'nftables') return { mode, node: settings.config };
  if (mode === 'iptables') return { mode, node: settings.config, iptables: settings.iptables };
  const ipvs = { scheduler: '', excludeCIDRs: [], randomFully: settings.iptables.randomFully };
  return { mode, node: settings.config, ipvs };
}

/**
 * Reads one -f file. Unlike render, a document that cannot be read fails the command: a diff against part of a
 * file would show the objects of the missing part as deleted (or added), which is worse than no answer.
 */
function load(path: string, io: DiffIO): ManifestObjects | undefined {
  const loaded = loadManifestFile(path, 'diff', {
    readFile: io.readFile,
    stderr: io.stderr,
    now: io.now ?? (() => performance.now()),
  });
  if (!loaded.ok) {
    io.stderr(`diff: ${loaded.error}\n`);
    return undefined;
  }
  const { problems } = loaded.objects;
  if (problems.length > 0) {
    for (const p of problems) io.stderr(`diff: ${p}\n`);
    io.stderr(`diff: ${loaded.source} could not be read whole; nothing compared\n`);
    return undefined;
  }
  return loaded.objects;
}

function stateOf(objects: ManifestObjects, nodeName: string): ClusterState {
  return {
    services: objects.services,
    endpointSlices: objects.endpointSlices,
    node: objects.nodes.find((n) => n.metadata.name === nodeName),
  };
}

function soleNodeName(nodes: readonly Node[]): string | undefined {
  return nodes.length === 1 ? nodes[0]?.metadata.name : undefined;
}

function count(n: number, unit: string): string {
  return `${n.toLocaleString('en-US')} ${unit}${n === 1 ? '' : 's'}`;
}

const UNITS: Record<ProxyMode, string> = { nftables: 'operation', iptables: 'line', ipvs: 'operation' };

function eventsLine(events: DiffResult['events']): string {
  const parts: string[] = [];
  for (const kind of ['Service', 'EndpointSlice'] as const satisfies readonly ObjectKind[]) {
    const c: EventCounts = events[kind];
    for (const [verb, n] of [
      ['added', c.added],
      ['updated', c.updated],
      ['deleted', c.deleted],
    ] as const) {
      if (n > 0) parts.push(`${count(n, kind)} ${verb}`);
    }
  }
  return `changes: ${parts.length > 0 ? parts.join(', ') : 'none'}\n`;
}

/**
 * One section per mode: a header with the sizes, then what the proxy would send. Notes are `#` lines, which both
 * `nft -f` and iptables-restore read as comments, so a section's body stays valid input for its tool.
 */
function section(d: BackendDiff): string {
  let out = `${d.mode}: ${count(d.size, UNITS[d.mode])} (whole ruleset: ${d.total.toLocaleString('en-US')})\n`;
  if (!d.synced) out += `# nothing that reaches this node's proxy changed: it would not sync\n`;
  else if (d.full)
    out += `# a full sync: this node's topology zone changed, so the proxy rewrites everything\n`;
  out += d.text;
  return out;
}

export function formatText(result: DiffResult): string {
  return eventsLine(result.events) + result.backends.map((d) => '\n' + section(d)).join('');
}

export function formatJSON(nodeName: string, result: DiffResult): string {
  const out: Record<string, unknown> = { node: nodeName, changes: result.events };
  for (const d of result.backends) {
    const size = d.mode === 'iptables' ? { lines: d.size } : { operations: d.size };
    out[d.mode] = { ...size, total: d.total, synced: d.synced, full: d.full, text: d.text };
  }
  return JSON.stringify(out, null, 2) + '\n';
}
