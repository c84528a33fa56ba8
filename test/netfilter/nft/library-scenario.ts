// One sequence of nftables syncs and failures, run once with the executor over libnftables (in a child process
// inside its own network namespace: library.test.ts) and once with the `nft` binary (in the test's process, through
// `ip netns exec` of another namespace), so that the two records can be compared: the kernel's table after every
// step (`nft list table`, elements included), what the executor read back, and the errors it reported.
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { NftablesBackend } from '../../../packages/agent/src/backends/nftables/backend.js';
import { FLAT_LAYOUT } from '../../../packages/agent/src/backends/nftables/flat/layout.js';
import { UPSTREAM_LAYOUT } from '../../../packages/agent/src/backends/nftables/upstream-layout.js';
import { NftError } from '../../../packages/agent/src/netfilter/nft/errors.js';
import type { NftExecutor } from '../../../packages/agent/src/netfilter/nft/executor.js';
import type { NftCommandExecutor } from '../../../packages/agent/src/netfilter/nft/executor.js';
import type { NftTableRef } from '../../../packages/agent/src/netfilter/nft/serialize.js';
import { NftTransaction } from '../../../packages/agent/src/netfilter/nft/transaction.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { flatCluster, nodeFor } from '../../backends/nftables/flat-objects.js';

/** One step's outcome: what the kernel holds afterwards, or what went wrong. */
export interface ScenarioRecord {
  readonly step: string;
  readonly table?: string;
  readonly operations?: number;
  readonly read?: unknown;
  readonly error?: { message: string; code: string; line?: number; detail?: string };
}

/** nft names its input in its messages (`/dev/stdin`, or the in-memory file's path); the rest must be equal. */
export function withInputNamed(detail: string): string {
  return detail.replace(/^(?:\/dev\/stdin|\/proc\/self\/fd\/\d+):/gm, 'INPUT:');
}

function errorOf(e: unknown): ScenarioRecord['error'] {
  if (!(e instanceof NftError)) throw e;
  return {
    message: e.message,
    code: e.code,
    ...(e.line !== undefined ? { line: e.line } : {}),
    ...(e.detail !== undefined ? { detail: withInputNamed(e.detail) } : {}),
  };
}

/**
 * The sequence, for both families. `executorFor` gives each backend its own executor (the library's: its own
 * context); `commands` runs the `nft` binary in the same namespace, only to print the table after each step.
 */
export async function runScenario(
  executorFor: (ref: NftTableRef) => NftExecutor & Partial<Pick<NftCommandExecutor, 'runText'>>,
  commands: CommandRunner,
): Promise<ScenarioRecord[]> {
  const records: ScenarioRecord[] = [];
  for (const family of ['IPv4', 'IPv6'] as const) {
    const node = nodeFor(family);
    const ref: NftTableRef = { family: family === 'IPv6' ? 'ip6' : 'ip', table: 'kube-proxy' };
    const table = async (): Promise<string> => {
      const r = await commands.run('nft', ['list', 'table', ref.family, ref.table]);
      return r.code === 0 ? r.stdout : `absent: ${r.stderr}`;
    };
    const exec = executorFor(ref);
    const record = async (step: string, more: Partial<ScenarioRecord> = {}): Promise<void> =>
      void records.push({ step: `${family} ${step}`, table: await table(), ...more });
    await exec.run(new NftTransaction().add('add', { kind: 'table' }).add('delete', { kind: 'table' }));

    const clock = new FakeClock(0);
    const { cluster, load } = flatCluster(family);
    const backend = (layout = FLAT_LAYOUT): NftablesBackend =>
      new NftablesBackend({ node, commands, clock, layout, executor: executorFor(ref) });

    load(3);
    const flat = backend();
    await record('flat full sync', { operations: (await cluster.sync(flat)).operations });
    for (const n of [4, 5, 2]) {
      load(n);
      await record(`flat partial sync, ${n} endpoints`, {
        operations: (await cluster.sync(flat)).operations,
      });
    }
    cluster.deleteService('ns/dns');
    await record('flat partial sync, a Service deleted', {
      operations: (await cluster.sync(flat)).operations,
    });
    // A restart reads the live table back (every element) and writes only what differs.
    const restarted = backend();
    await record('flat restart', { operations: (await cluster.sync(restarted)).operations });
    const read = await exec.listWithElements?.();
    await record('read back', {
      read: read && {
        listing: read.listing,
        elements: [...read.elements].sort(([a], [b]) => a.localeCompare(b)),
      },
    });

    const upstream = backend(UPSTREAM_LAYOUT);
    await record('switch to upstream', { operations: (await cluster.sync(upstream)).operations });
    load(4);
    await record('upstream partial sync', { operations: (await cluster.sync(upstream)).operations });

    // Failures: nothing of a failed transaction is applied, and the error names the operation and nft's line.
    const bad = new NftTransaction()
      .add('add', { kind: 'chain', name: 'good-chain' })
      .add('add', { kind: 'rule', chain: 'good-chain', rule: 'drop' })
      .add('add', { kind: 'element', set: 'no-such-set', key: ['1.2.3.4'] })
      .add('add', { kind: 'rule', chain: 'good-chain', rule: 'jump no-such-chain' });
    await exec.run(bad).then(
      () => record('bad transaction', { error: { message: 'applied', code: 'none' } }),
      (e: unknown) => record('bad transaction', { error: errorOf(e) }),
    );
    if (exec.runText) {
      // Checked, not applied (nft -c; the library's dry run): the table stays as it was.
      await exec.runText(`add chain ${ref.family} kube-proxy checked-only\n`, [], true);
      await record('check only');

      await exec.runText(`add rule ${ref.family} kube-proxy nat-prerouting bogus words\n`, [], false).then(
        () => record('syntax error', { error: { message: 'applied', code: 'none' } }),
        (e: unknown) => record('syntax error', { error: errorOf(e) }),
      );
    }
    await exec.run(new NftTransaction().add('delete', { kind: 'table' }));
    await exec.list().then(
      () => record('listing a missing table', { error: { message: 'listed', code: 'none' } }),
      (e: unknown) => record('listing a missing table', { error: errorOf(e) }),
    );
  }
  return records;
}
