// Runs one reconcile pass for one family with Debian's `conntrack` tool, through the CommandRunner seam: list the
// family's UDP flows, plan the stale ones (reconcile.ts), delete them in one batch (`conntrack -R <file>`, one
// `-D` line per filter), and report the pass to kubeproxy_conntrack_reconciler_*. Upstream does the same over
// netlink; the tool is what an operator would type, and it is in every node image that has iptables.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Endpoint } from '../../model/endpoint.js';
import type { IPFamily } from '../../model/ip.js';
import type { ServicePort } from '../../model/service-port.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import type { CommandRunner } from '../command.js';
import { parseConntrackListing } from './flow.js';
import { deletionArgs, planStaleFlowDeletions } from './reconcile.js';
import type { ConntrackDeletion } from './reconcile.js';

/** What a reconcile pass reports (kubeproxy_conntrack_reconciler_*); the proxier's metrics implement it. */
export interface ConntrackMetrics {
  conntrackReconcile(family: IPFamily, seconds: number, deletedEntries: number): void;
}

export interface ConntrackReconcilerOptions {
  readonly runner: CommandRunner;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics?: ConntrackMetrics;
  /** Per conntrack invocation; default 30 s. */
  readonly timeoutMs?: number;
  /** The tool's path; default "conntrack". */
  readonly command?: string;
}

export interface ConntrackReconcileResult {
  readonly family: IPFamily;
  /** UDP flows listed. */
  readonly listed: number;
  readonly deletions: readonly ConntrackDeletion[];
  /** Flows the tool reports deleted. */
  readonly deleted: number;
  readonly seconds: number;
  /** Set when the pass stopped early (listing failed) or a deletion batch failed, with the tool's words. */
  readonly error?: string;
  /** Listing lines that could not be read. */
  readonly skippedLines: readonly string[];
}

function l3(family: IPFamily): string {
  return family === 'IPv6' ? 'ipv6' : 'ipv4';
}

/** Lines the tool echoes for deleted entries. */
function countEntries(stdout: string): number {
  return parseConntrackListing(stdout).flows.length;
}

export async function reconcileConntrack(
  o: ConntrackReconcilerOptions,
  family: IPFamily,
  serviceMap: ReadonlyMap<string, ServicePort>,
  endpointsMap: ReadonlyMap<string, readonly Endpoint[]>,
  deletedServicePorts: readonly ServicePort[] = [],
): Promise<ConntrackReconcileResult> {
  const cmd = o.command ?? 'conntrack';
  const timeoutMs = o.timeoutMs ?? 30_000;
  const started = o.clock.now();
  const finish = (r: Omit<ConntrackReconcileResult, 'seconds' | 'family'>): ConntrackReconcileResult => {
    const seconds = Math.max(0, (o.clock.now() - started) / 1000);
    o.metrics?.conntrackReconcile(family, seconds, r.deleted);
    return { family, seconds, ...r };
  };

  const list = await o.runner.run(cmd, ['-L', '-p', 'udp', '-f', l3(family), '-o', 'extended'], {
    timeoutMs,
  });
  if (list.code !== 0) {
    const error = `conntrack -L -f ${l3(family)} failed (exit ${list.code}): ${list.stderr.trim()}`;
    o.logger.error('Failed to list conntrack entries', { ipFamily: family, error });
    return finish({ listed: 0, deletions: [], deleted: 0, error, skippedLines: [] });
  }
  const listing = parseConntrackListing(list.stdout);
  if (listing.skipped.length > 0) {
    o.logger.v(2, () => ({
      msg: 'Skipped unreadable conntrack lines',
      fields: { ipFamily: family, count: listing.skipped.length, first: listing.skipped[0] },
    }));
  }
  const plan = planStaleFlowDeletions(family, serviceMap, endpointsMap, listing.flows, deletedServicePorts);
  if (plan.deletions.length === 0) {
    return finish({ listed: listing.flows.length, deletions: [], deleted: 0, skippedLines: listing.skipped });
  }

  const { deleted, error } = await deleteFlows(o, cmd, timeoutMs, plan.deletions);
  if (error !== undefined) {
    o.logger.error('Failed to delete stale conntrack entries', { ipFamily: family, error });
  } else {
    o.logger.v(2, () => ({
      msg: 'Deleted stale conntrack entries',
      fields: { ipFamily: family, filters: plan.deletions.length, deleted },
    }));
  }
  return finish({
    listed: listing.flows.length,
    deletions: plan.deletions,
    deleted,
    skippedLines: listing.skipped,
    ...(error !== undefined ? { error } : {}),
  });
}

/**
 * Deletes in one `conntrack -R <file>` run (one `-D` line per filter). The batch goes through a file, not stdin:
 * the tool opens /dev/stdin by path, which fails when stdin is a socket, as a spawned child's is. A tool without
 * -R (older than 1.4.6), or a failed batch, falls back to one `conntrack -D` per filter.
 */
async function deleteFlows(
  o: ConntrackReconcilerOptions,
  cmd: string,
  timeoutMs: number,
  deletions: readonly ConntrackDeletion[],
): Promise<{ deleted: number; error?: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'kpts-conntrack-'));
  try {
    const file = join(dir, 'delete.batch');
    await writeFile(file, deletions.map((d) => deletionArgs(d).join(' ')).join('\n') + '\n');
    const batch = await o.runner.run(cmd, ['-R', file], { timeoutMs });
    if (batch.code === 0) return { deleted: countEntries(batch.stdout) };
    o.logger.v(2, () => ({
      msg: 'conntrack -R failed; deleting filter by filter',
      fields: { exit: batch.code, stderr: batch.stderr.trim() },
    }));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  let deleted = 0;
  const errors: string[] = [];
  for (const d of deletions) {
    const r = await o.runner.run(cmd, deletionArgs(d), { timeoutMs });
    deleted += countEntries(r.stdout);
    // Exit 1 with "0 flow entries have been deleted" only means the flow had already gone.
    if (r.code !== 0 && !/\b0 flow entries/.test(r.stderr)) {
      errors.push(`conntrack ${deletionArgs(d).join(' ')} failed (exit ${r.code}): ${r.stderr.trim()}`);
    }
  }
  return errors.length === 0 ? { deleted } : { deleted, error: errors.join('; ') };
}

/** The reconciler as the proxier holds it (src/sync/proxier.ts ConntrackSink); keeps the last pass's result. */
export class ConntrackReconciler {
  readonly #o: ConntrackReconcilerOptions;
  #last: ConntrackReconcileResult | undefined;

  constructor(options: ConntrackReconcilerOptions) {
    this.#o = options;
  }

  get lastResult(): ConntrackReconcileResult | undefined {
    return this.#last;
  }

  async reconcile(
    family: IPFamily,
    serviceMap: ReadonlyMap<string, ServicePort>,
    endpointsMap: ReadonlyMap<string, readonly Endpoint[]>,
    deletedServicePorts: readonly ServicePort[] = [],
  ): Promise<void> {
    this.#last = await reconcileConntrack(this.#o, family, serviceMap, endpointsMap, deletedServicePorts);
  }
}
