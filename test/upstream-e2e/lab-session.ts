// The cluster the ported tests run against: the lab's own startLab (what `lab up` runs), in process, with two
// nodes and the chosen proxy mode, taken in turn with the other lab suites (labTurn), and always taken down again
// (lab.stop, then `lab down` for whatever a failed stop left) before the turn is given back.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLab, type Lab } from '../../packages/lab/src/cluster/index.js';
import { labDown } from '../../packages/lab/src/cluster/down.js';
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
}

function labOptions(mode: UpstreamMode): {
  mode: 'nftables' | 'iptables';
  nftablesLayout?: 'upstream' | 'flat';
} {
  if (mode === 'iptables') return { mode: 'iptables' };
  return { mode: 'nftables', nftablesLayout: mode === 'nftables-flat' ? 'flat' : 'upstream' };
}

export async function startUpstreamLab(
  mode: UpstreamMode,
  o: { readonly signal?: AbortSignal; readonly progress?: (line: string) => void } = {},
): Promise<UpstreamLab> {
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
      nodes: 2,
      ...labOptions(mode),
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
  return { kube: new Kube(lab.kubeconfigPath), lab, stop };
}
