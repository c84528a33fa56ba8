// `kube-proxy-ts render --proxy-mode nftables|iptables -f FILE [flags]`: prints the full-sync input this node
// would give the kernel for the Services and EndpointSlices in FILE, without touching the kernel, so that it can be
// read, diffed, or piped to `nft -c -f -` / `iptables-restore --test`.
import { choiceFlag } from './choice-flag.js';
import { performance } from 'node:perf_hooks';
import { loadManifestFile, PROGRESS_AFTER_MS } from '../kube/manifest-file.js';
import type { Node } from '../api/objects.js';
import type { NftablesLayoutName } from '../config/nftables-layout.js';
import { DEFAULT_NFTABLES_LAYOUT, NFTABLES_LAYOUTS } from '../config/nftables-layout.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import { PROXY_MODES } from '../config/proxy-mode.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../sync/backend.js';
import { snapshotFromObjects } from '../sync/snapshot.js';
import { checkNodeFlags, NODE_FLAGS_USAGE, NODE_OPTIONS, nodeSettings } from './node-options.js';
import { runCommandSync, UsageError } from './command-line.js';
import type { FlagValues } from './command-line.js';
import { processFileIO } from './cluster-objects.js';
import type { FileCommandIO } from './cluster-objects.js';
import { jumpsScript, RENDERERS } from './renderers.js';
import type { IptablesRenderOptions } from './renderers.js';

export const RENDER_USAGE = `Usage: kube-proxy-ts render --proxy-mode nftables|iptables -f FILE [flags]

Prints the full-sync transaction (nftables) or iptables-restore input (iptables) this node would apply for the
Services, EndpointSlices and (optionally) this node's Node object in FILE (JSON: one object, a List or one object
after another; or multi-document YAML; "-" reads stdin). Nothing is applied. Pipe it to 'nft -c -f -' or
'iptables-restore --test' to check it.

nftables mode writes the text as the agent gives it to nft: a set's elements as one statement (up to 1,000 at a
time, 'add element ip kube-proxy service-ips { e1, e2, ... }'), which nft loads faster than one per element.

iptables mode ends with a comment block: the commands that ensure the jumps from PREROUTING, OUTPUT,
POSTROUTING, INPUT and FORWARD into the KUBE-* chains, which kube-proxy makes apart from the restore input (as
upstream does). The restore input alone moves no packets; apply it with 'iptables-restore --noflush', then run
the jumps ('--jumps-script' prints them as a shell script). Lines starting with '#' are comments to
iptables-restore, so the whole output is still valid restore input.

Flags:
  --proxy-mode MODE              nftables (default) or iptables
  --nftables-layout LAYOUT       nftables mode: upstream (default; upstream kube-proxy's ruleset, chain for
                                 chain) or flat (shared maps and dispatch chains, no chain per Service: loads
                                 and changes in time that does not grow with the cluster)
  -f, --filename FILE            manifests to read ("-" for stdin)
  --hostname-override NAME       this node's name (default: the file's only Node, else the host name)
${NODE_FLAGS_USAGE} iptables mode only:
  --jumps-script                 print only the jump commands, as a shell script (ip6tables for IPv6)
`;

/** The stages of one render, for benchmarks: reading (file and parse), the model, rendering, handing out the text. */
export type RenderPhase = 'read' | 'model' | 'render' | 'write';

export interface RenderIO extends FileCommandIO {
  /** Monotonic milliseconds (default performance.now): when reading is slow, progress goes to stderr. */
  readonly now?: () => number;
  /** Told how long each stage took (bench/render.ts). */
  readonly onPhase?: (phase: RenderPhase, ms: number) => void;
}

export const defaultRenderIO: RenderIO = processFileIO;

const RENDER_LINE = {
  name: 'render',
  usage: RENDER_USAGE,
  options: {
    'proxy-mode': { type: 'string', default: 'nftables' },
    'nftables-layout': { type: 'string', default: DEFAULT_NFTABLES_LAYOUT },
    filename: { type: 'string', short: 'f' },
    ...NODE_OPTIONS,
    'jumps-script': { type: 'boolean', default: false },
  },
} as const;

/** Runs the render command; returns the exit code. */
export function renderCommand(argv: readonly string[], io: RenderIO = defaultRenderIO): number {
  return runCommandSync(RENDER_LINE, argv, io, ({ values }) => render(values, io));
}

function render(values: FlagValues<typeof RENDER_LINE>, io: RenderIO): number {
  const mode = choiceFlag('--proxy-mode', 'mode', PROXY_MODES, values['proxy-mode'], 'nftables');
  const layout = choiceFlag(
    '--nftables-layout',
    'layout',
    NFTABLES_LAYOUTS,
    values['nftables-layout'],
    DEFAULT_NFTABLES_LAYOUT,
  );
  if (layout !== DEFAULT_NFTABLES_LAYOUT && mode !== 'nftables')
    throw new UsageError('--nftables-layout: only with --proxy-mode nftables');
  checkNodeFlags(values);
  if (!values.filename) throw new UsageError('-f FILE is required');
  const jumpsOnly = values['jumps-script'] === true;
  if (jumpsOnly && mode !== 'iptables')
    throw new UsageError('--jumps-script: only with --proxy-mode iptables');

  const now = io.now ?? (() => performance.now());
  const started = now();
  let phaseStart = started;
  const phaseDone = (phase: RenderPhase): void => {
    const t = now();
    io.onPhase?.(phase, t - phaseStart);
    phaseStart = t;
  };
  const loaded = loadManifestFile(values.filename, 'render', {
    readFile: io.readFile,
    stderr: io.stderr,
    now,
  });
  if (!loaded.ok) {
    io.stderr(`render: ${loaded.error}\n`);
    return 1;
  }
  const objects = loaded.objects;
  for (const p of objects.problems) io.stderr(`render: skipped ${p}\n`);
  phaseDone('read');

  const nodeName = (values['hostname-override'] ?? soleNodeName(objects.nodes) ?? io.hostname())
    .trim()
    .toLowerCase();
  const settings = nodeSettings(values, mode as ProxyMode, nodeName, objects.nodes);
  for (const p of settings.problems) io.stderr(`render: ${p}\n`);
  const { node, family, config, iptables } = settings;

  if (jumpsOnly) {
    io.stdout(jumpsScript(config, iptables));
    return 0;
  }

  // A large input has been slow to read already; say what comes next, so the wait has a name.
  const slow = now() - started >= PROGRESS_AFTER_MS;
  if (slow) {
    io.stderr(
      `render: ${objects.services.length.toLocaleString('en-US')} Services, ` +
        `${objects.endpointSlices.length.toLocaleString('en-US')} EndpointSlices: building the model…\n`,
    );
  }
  const { snapshot, skipped } = snapshotFromObjects({
    family,
    nodeName,
    services: objects.services,
    endpointSlices: objects.endpointSlices,
    node,
  });
  for (const s of skipped) io.stderr(`render: skipped ${s.kind} ${s.name}: ${s.reason}\n`);
  phaseDone('model');
  if (slow) io.stderr(`render: rendering ${mode}…\n`);
  const text = renderFor(mode as ProxyMode, snapshot, config, iptables, layout);
  phaseDone('render');
  io.stdout(text);
  phaseDone('write');
  return 0;
}

export function renderFor(
  mode: ProxyMode,
  snapshot: ProxySnapshot,
  node: NodeNetworkConfig,
  iptables: IptablesRenderOptions,
  nftablesLayout: NftablesLayoutName = DEFAULT_NFTABLES_LAYOUT,
): string {
  return RENDERERS[mode](snapshot, node, iptables, nftablesLayout);
}

function soleNodeName(nodes: readonly Node[]): string | undefined {
  return nodes.length === 1 ? nodes[0]?.metadata.name : undefined;
}
