// One sequence of element writes, run once with the netlink writer (in a child process inside its own network
// namespace: netlink-child.ts) and once with `nft -f` (in another namespace), so that the two records can be
// compared step by step: the table as `nft list table` prints it after each step, and what each step reported.
//
// The operations are the flat layout's own: a fresh node's full sync and a later partial sync of the kernel tests'
// cluster (test/backends/nftables/flat-objects.ts: every frontend kind, both traffic policies, affinity, TCP, UDP
// and SCTP, a Service with a couple of hundred endpoints), for an IPv4 and an IPv6 table, caught by an executor
// that keeps them. What the writer does not take (the table, chains, rules, set declarations, the interval set's
// elements) goes to `nft -f` on both sides, in its place in the order; then hand-made steps: flushes, deletes,
// creates, and batches that fail.
import { NftablesBackend } from '../../../../packages/agent/src/backends/nftables/backend.js';
import { FLAT_LAYOUT } from '../../../../packages/agent/src/backends/nftables/flat/layout.js';
import type { CommandRunner } from '../../../../packages/agent/src/netfilter/command.js';
import { NftError } from '../../../../packages/agent/src/netfilter/nft/errors.js';
import type { NftExecutor, NftRunStats } from '../../../../packages/agent/src/netfilter/nft/executor.js';
import { parseNftError } from '../../../../packages/agent/src/netfilter/nft/executor.js';
import type { NftMap, NftOperation, NftSet } from '../../../../packages/agent/src/netfilter/nft/objects.js';
import { canApply } from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';
import type { ElementSchema } from '../../../../packages/agent/src/netfilter/nft/netlink/schema.js';
import { elementSchemas } from '../../../../packages/agent/src/netfilter/nft/netlink/schema.js';
import type { NftTableRef } from '../../../../packages/agent/src/netfilter/nft/serialize.js';
import { serializeTransaction } from '../../../../packages/agent/src/netfilter/nft/serialize.js';
import type { NftTransaction } from '../../../../packages/agent/src/netfilter/nft/transaction.js';
import { FakeClock } from '../../../../packages/agent/src/util/clock.js';
import { flatCluster, nodeFor } from '../../../backends/nftables/flat-objects.js';

/** What applying one step's element operations gave: fine, or the error's class and the operation at fault. */
export type StepOutcome = { readonly ok: true } | { readonly code: string; readonly index?: number };

export interface StepRecord {
  readonly step: string;
  readonly outcome: StepOutcome;
  /** Operations the step gave the element applier (the rest went to `nft -f` on both sides). */
  readonly viaElements: number;
  /** `nft list table` afterwards. */
  readonly table: string;
}

/** Applies element operations (all pass canApply) on table `ref`, as one transaction. */
export type ElementApplier = (
  ref: NftTableRef,
  ops: readonly NftOperation[],
  schemas: ReadonlyMap<string, ElementSchema>,
) => Promise<StepOutcome>;

/** The element applier of the `nft -f` side: the executor's text and its error mapping, through `commands`. */
export function nftApplier(commands: CommandRunner): ElementApplier {
  return async (ref, ops) => {
    const text = serializeTransaction(ref, ops);
    const r = await commands.run('nft', ['-f', '-'], { stdin: text.text });
    if (r.code === 0) return { ok: true };
    const e = parseNftError(r.stderr, ops, r.code, (l, c) => text.operationAt(l, c));
    return { code: e.code, ...(e.line !== undefined && e.operation ? { index: e.line - 1 } : {}) };
  };
}

/** A node with no table: keeps each transaction's operations, applies nothing. */
class KeepingExecutor implements NftExecutor {
  operations: NftOperation[] = [];
  constructor(readonly ref: NftTableRef) {}
  async run(tx: NftTransaction): Promise<NftRunStats> {
    this.operations.push(...tx.operations);
    return { serializeMs: 0, applyMs: 0 };
  }
  async list(): Promise<never> {
    throw new NftError('no table', { code: 'NotFound' });
  }
  async listElements(): Promise<never> {
    throw new NftError('no table', { code: 'NotFound' });
  }
  take(): NftOperation[] {
    const ops = this.operations;
    this.operations = [];
    return ops;
  }
}

/** The flat layout's operations for the scenario's two syncs of one family. */
async function flatSyncs(family: 'IPv4' | 'IPv6', ref: NftTableRef): Promise<NftOperation[][]> {
  const executor = new KeepingExecutor(ref);
  const noCommands: CommandRunner = { run: async () => ({ code: 1, stdout: '', stderr: 'no commands' }) };
  const backend = new NftablesBackend({
    node: nodeFor(family),
    commands: noCommands,
    clock: new FakeClock(0),
    layout: FLAT_LAYOUT,
    executor,
  });
  const { cluster, load } = flatCluster(family);
  load(200);
  await cluster.sync(backend);
  const cold = executor.take();
  // Endpoints go (slots move, the last ones are deleted, verdicts point at new dispatch chains), a Service goes.
  load(120);
  cluster.deleteService('ns/dns');
  await cluster.sync(backend);
  return [cold, executor.take()];
}

/** Runs of operations in order, each all for the element writer or all for nft. */
function segments(
  ops: readonly NftOperation[],
  schemas: ReadonlyMap<string, ElementSchema>,
): { readonly netlink: boolean; readonly ops: NftOperation[] }[] {
  const out: { netlink: boolean; ops: NftOperation[] }[] = [];
  for (const op of ops) {
    const netlink = canApply([op], schemas);
    const last = out[out.length - 1];
    if (last && last.netlink === netlink) last.ops.push(op);
    else out.push({ netlink, ops: [op] });
  }
  return out;
}

const el = (
  verb: 'add' | 'create' | 'delete',
  set: string,
  key: string,
  value?: string,
  comment?: string,
): NftOperation => ({
  verb,
  object: {
    kind: 'element',
    set,
    key: [key],
    ...(value !== undefined ? { value: [value] } : {}),
    ...(comment !== undefined ? { comment } : {}),
  },
});

/** The hand-made steps for one family, after the two syncs: their names, operations and expected outcome. */
function laterSteps(family: 'IPv4' | 'IPv6'): {
  readonly step: string;
  readonly ops: NftOperation[];
  readonly fails?: { code: string; index: number };
}[] {
  const a = family === 'IPv4' ? (n: number) => `198.18.200.${n}` : (n: number) => `2001:db8:200::${n}`;
  return [
    {
      step: 'flush a set and a map, refill, delete and create',
      ops: [
        { verb: 'flush', object: { kind: 'set', name: 'cluster-ips' } },
        el('add', 'cluster-ips', a(1)),
        el('add', 'cluster-ips', a(2)),
        { verb: 'flush', object: { kind: 'map', name: 'no-endpoint-services' } },
        el('add', 'no-endpoint-services', `${a(3)} . tcp . 80`, 'drop', 'ns/gone:http'),
        el('create', 'cluster-ips', a(4), undefined, 'made with create'),
        el('delete', 'cluster-ips', a(2)),
        el('add', 'service-nodeports', 'sctp . 30999', 'goto external-cluster'),
      ],
    },
    {
      step: 'an element for a set that does not exist',
      ops: [el('add', 'cluster-ips', a(5)), el('add', 'no-such-set', a(6)), el('add', 'cluster-ips', a(7))],
      fails: { code: 'NotFound', index: 1 },
    },
    {
      step: 'a delete of an absent element',
      ops: [
        el('add', 'cluster-ips', a(8)),
        el('add', 'cluster-ips', a(9)),
        el('delete', 'cluster-ips', a(99)),
      ],
      fails: { code: 'NotFound', index: 2 },
    },
    {
      step: 'a create of an element that exists',
      ops: [el('add', 'cluster-ips', a(10)), el('create', 'cluster-ips', a(1))],
      fails: { code: 'Exists', index: 1 },
    },
    {
      step: 'a verdict to a chain that does not exist',
      ops: [
        el('add', 'cluster-ips', a(11)),
        el('add', 'service-ips', `${a(12)} . tcp . 80`, 'goto no-such-chain'),
        el('add', 'cluster-ips', a(13)),
      ],
      fails: { code: 'NotFound', index: 1 },
    },
  ];
}

/** The schemas the writer gets, plus one for a set that does not exist (so that the kernel is the one to say). */
function schemasOf(ops: readonly NftOperation[]): Map<string, ElementSchema> {
  const containers = ops.flatMap((op) =>
    (op.object.kind === 'set' || op.object.kind === 'map') && op.verb === 'add'
      ? [op.object as NftSet | NftMap]
      : [],
  );
  const schemas = elementSchemas(containers);
  const cluster = schemas.get('cluster-ips');
  if (cluster) schemas.set('no-such-set', cluster);
  return schemas;
}

export interface ScenarioFamily {
  readonly ref: NftTableRef;
  readonly schemas: ReadonlyMap<string, ElementSchema>;
}

/**
 * The sequence for both families: element operations through `elements`, everything else and every listing
 * through `commands` (`nft` in the same namespace). Returns the records and, for listing checks, the schemas.
 */
export async function runScenario(
  elements: ElementApplier,
  commands: CommandRunner,
): Promise<{ records: StepRecord[]; families: ScenarioFamily[] }> {
  const records: StepRecord[] = [];
  const families: ScenarioFamily[] = [];
  const nft = nftApplier(commands);
  for (const family of ['IPv4', 'IPv6'] as const) {
    const ref: NftTableRef = { family: family === 'IPv6' ? 'ip6' : 'ip', table: 'kube-proxy' };
    const table = async (): Promise<string> => {
      const r = await commands.run('nft', ['list', 'table', ref.family, ref.table]);
      return r.code === 0 ? r.stdout : `absent: ${r.stderr}`;
    };
    const [cold, partial] = await flatSyncs(family, ref);
    const schemas = schemasOf(cold as NftOperation[]);
    families.push({ ref, schemas });
    for (const [name, ops] of [
      ['cold start', cold],
      ['partial sync', partial],
    ] as const) {
      let outcome: StepOutcome = { ok: true };
      let viaElements = 0;
      for (const seg of segments(ops ?? [], schemas)) {
        if (seg.netlink) viaElements += seg.ops.length;
        const r = seg.netlink ? await elements(ref, seg.ops, schemas) : await nft(ref, seg.ops, schemas);
        if (!('ok' in r)) {
          outcome = r;
          break;
        }
      }
      records.push({ step: `${family} ${name}`, outcome, viaElements, table: await table() });
    }
    for (const s of laterSteps(family)) {
      records.push({
        step: `${family} ${s.step}`,
        outcome: await elements(ref, s.ops, schemas),
        viaElements: s.ops.length,
        table: await table(),
      });
    }
  }
  return { records, families };
}

/** What laterSteps expects of each failing step (for the test's own assertions). */
export function expectedFailures(): Map<string, { code: string; index: number }> {
  const out = new Map<string, { code: string; index: number }>();
  for (const family of ['IPv4', 'IPv6'] as const) {
    for (const s of laterSteps(family)) if (s.fails) out.set(`${family} ${s.step}`, s.fails);
  }
  return out;
}
