// The flat layout's cold-start transaction for the netlink element writer's measurement (netlink-elements.ts): the
// operations NftablesBackend hands its executor on a fresh node for the bench's cluster (bench/workload.ts), caught
// by an executor that keeps them instead of running nft, and split as a caller of the writer would split them:
// what only nft can do (the table, chains, rules, set declarations, the interval set's elements) and the element
// operations the writer takes.
import { NftablesBackend } from 'kube-proxy-ts/backends/nftables/backend.js';
import { NFTABLES_LAYOUT_BY_NAME } from 'kube-proxy-ts/backends/nftables/layouts.js';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { NftError } from 'kube-proxy-ts/netfilter/nft/errors.js';
import type { NftExecutor, NftRunStats } from 'kube-proxy-ts/netfilter/nft/executor.js';
import type { NftMap, NftOperation, NftSet } from 'kube-proxy-ts/netfilter/nft/objects.js';
import { canApply } from 'kube-proxy-ts/netfilter/nft/netlink/elements.js';
import type { ElementSchema } from 'kube-proxy-ts/netfilter/nft/netlink/schema.js';
import { elementSchemas } from 'kube-proxy-ts/netfilter/nft/netlink/schema.js';
import type { NftTableRef } from 'kube-proxy-ts/netfilter/nft/serialize.js';
import type { NftTransaction } from 'kube-proxy-ts/netfilter/nft/transaction.js';
import { benchClock } from './measure.js';
import { BenchCluster, NFTABLES_BENCH_NODE } from './workload.js';

export const BENCH_REF: NftTableRef = { family: 'ip', table: 'kube-proxy' };

/** An executor for a node with no table: it keeps every transaction's operations and applies nothing. */
class KeepingExecutor implements NftExecutor {
  readonly ref = BENCH_REF;
  readonly operations: NftOperation[] = [];

  async run(tx: NftTransaction): Promise<NftRunStats> {
    for (const op of tx.operations) this.operations.push(op);
    return { serializeMs: 0, applyMs: 0 };
  }

  async list(): Promise<never> {
    throw new NftError('no table', { code: 'NotFound' });
  }

  async listElements(): Promise<never> {
    throw new NftError('no table', { code: 'NotFound' });
  }
}

const noCommands: CommandRunner = {
  run: async () => ({ code: 1, stdout: '', stderr: 'the bench workload runs no command' }),
};

export interface ColdStart {
  /** Operations only nft applies, in their order (table, chains, set declarations, rules, interval elements). */
  readonly setup: readonly NftOperation[];
  /** The element operations the netlink writer takes, in their order. */
  readonly elements: readonly NftOperation[];
  readonly schemas: ReadonlyMap<string, ElementSchema>;
}

/** The cold start of `services` bench Services with `endpoints` endpoints each, split for the writer. */
export async function flatColdStart(services: number, endpoints: number): Promise<ColdStart> {
  const executor = new KeepingExecutor();
  const backend = new NftablesBackend({
    node: NFTABLES_BENCH_NODE,
    commands: noCommands,
    clock: benchClock,
    layout: NFTABLES_LAYOUT_BY_NAME.flat,
    executor,
  });
  const cluster = new BenchCluster(NFTABLES_BENCH_NODE.nodeName, endpoints);
  cluster.load(services);
  await backend.sync(cluster.snapshot, cluster.checkout());
  const containers = executor.operations.flatMap((op) =>
    (op.object.kind === 'set' || op.object.kind === 'map') && op.verb === 'add'
      ? [op.object as NftSet | NftMap]
      : [],
  );
  const schemas = elementSchemas(containers);
  const setup: NftOperation[] = [];
  const elements: NftOperation[] = [];
  for (const op of executor.operations) (canApply([op], schemas) ? elements : setup).push(op);
  return { setup, elements, schemas };
}
