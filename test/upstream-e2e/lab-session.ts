// The cluster the ported tests run against: the lab's own startLab (what `lab up` runs), in process, with two
// nodes in two zones (or as many nodes and zones as asked), IPv4 or dual-stack, and the chosen proxy mode, taken in
// turn with the other lab suites (labTurn), and always taken down again (lab.stop, then `lab down` for whatever a
// failed stop left) before the turn is given back.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLab, type Lab } from '../../packages/lab/src/cluster/index.js';
import { labDown } from '../../packages/lab/src/cluster/down.js';
import { API_OUTAGE_MS } from '../../packages/lab/src/cluster/relay.js';
import { labTurn } from '../e2e/helpers/lab-turn.js';
import { runPrefix } from '../helpers/kernel.js';
import { Kube } from './kube.js';

export const UPSTREAM_MODES = ['nftables', 'nftables-flat', 'iptables'] as const;
export type UpstreamMode = (typeof UPSTREAM_MODES)[number];

export function isUpstreamMode(s: string): s is UpstreamMode {
  return (UPSTREAM_MODES as readonly string[]).includes(s);
}

export interface UpstreamLab {
  readonly kube: Kube;
  readonly lab: Lab;
  /** Stops the lab, removes its leftovers, gives the turn back; safe to call twice. */
  stop(): Promise<void>;
  /** Restarts the lab's API server (`lab apiserver-restart`'s outage) and resolves once it serves again. */
  restartApiServer(): Promise<void>;
}

function labOptions(mode: UpstreamMode): {
  mode: 'nftables' | 'iptables';
  nftablesLayout?: 'upstream' | 'flat';
} {
  if (mode === 'iptables') return { mode: 'iptables' };
  return { mode: 'nftables', nftablesLayout: mode === 'nftables-flat' ? 'flat' : 'upstream' };
}

/** `--ip-family`: the lab's families (dual: IPv4 primary, IPv6 from 2001:db8::/32). */
export const UPSTREAM_IP_FAMILIES = ['ipv4', 'dual'] as const;
export type UpstreamIPFamily = (typeof UPSTREAM_IP_FAMILIES)[number];

/** The lab the runner brings up unless told otherwise: two nodes, one per zone. */
export const DEFAULT_UPSTREAM_NODES = 2;
export const DEFAULT_UPSTREAM_ZONES: readonly string[] = ['zone-a', 'zone-b'];

export interface UpstreamLabOptions {
  readonly signal?: AbortSignal;
  readonly progress?: (line: string) => void;
  /** `lab up --ip-family`; default ipv4. */
  readonly ipFamily?: UpstreamIPFamily;
  /** `lab up --nodes`; default 2. */
  readonly nodes?: number;
  /** `lab up --zones`: the nodes' zone labels, round robin; default zone-a, zone-b. */
  readonly zones?: readonly string[];
  /** `lab up --control-plane-taint`: kubeadm's NoSchedule taint on the control-plane node; default untainted. */
  readonly controlPlaneTaint?: boolean;
}

export async function startUpstreamLab(mode: UpstreamMode, o: UpstreamLabOptions = {}): Promise<UpstreamLab> {
  const releaseTurn = await labTurn();
  const prefix = runPrefix();
  const stateDir = join(mkdtempSync(join(tmpdir(), `${prefix}-`)), 'state');
  let lab: Lab | undefined;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      try {
        await lab?.stop();
        await labDown(stateDir, { prefix }).catch(() => undefined);
      } finally {
        releaseTurn();
      }
    })());
  try {
    lab = await startLab({
      nodes: o.nodes ?? DEFAULT_UPSTREAM_NODES,
      ...labOptions(mode),
      ipFamily: o.ipFamily ?? 'ipv4',
      zones: o.zones ?? DEFAULT_UPSTREAM_ZONES,
      ...(o.controlPlaneTaint === true ? { controlPlaneTaint: true } : {}),
      stateDir,
      prefix,
      workload: false,
      web: false,
      ...(o.signal ? { signal: o.signal } : {}),
      ...(o.progress ? { progress: o.progress } : {}),
    });
  } catch (e) {
    await stop();
    throw e;
  }
  const running = lab;
  return {
    kube: new Kube(lab.kubeconfigPath),
    lab,
    stop,
    restartApiServer: () => running.apiServerRestart(API_OUTAGE_MS),
  };
}
