// The flat layout through the executor an agent gets on its node (chooseNftExecutors 'auto' inside the node's
// namespace: libnftables for the table's objects, nf_tables netlink for element-only transactions and for reading
// sets back) against the `nft` command: the same steps (flat-steps.ts) in two namespaces the test makes must leave
// the same `nft list table` after every step, IPv4 and IPv6, and the in-process side must have written the
// elements over netlink, and its restart must have read no element back.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { netnsCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { NftCommandExecutor } from '../../../packages/agent/src/netfilter/nft/executor.js';
import type { ElementsExecutorCounts } from '../../../packages/agent/src/netfilter/nft/elements-executor.js';
import { kernelNamespaces, runInNamespace } from '../../helpers/kernel.js';
import type { StepRecord } from './flat-steps.js';
import { runFlatSteps } from './flat-steps.js';

const suite = kernelNamespaces(['inproc', 'cmd']);
const [inProcessNs, commandNs] = suite.names;

interface ChildOutput {
  readonly reason: string;
  readonly records: StepRecord[];
  readonly counts: ElementsExecutorCounts[];
}

function runChild(family: string): Promise<ChildOutput> {
  return runInNamespace(inProcessNs, new URL('./flat-in-process-child.ts', import.meta.url), [family]);
}

describe(
  'flat layout: in-process executor (libnftables + netlink) against the nft command',
  suite.options,
  () => {
    suite.hooks();

    for (const family of ['IPv4', 'IPv6'] as const) {
      test(`${family}: every step leaves the same table`, async () => {
        const commands = netnsCommandRunner(commandNs);
        const nftFamily = family === 'IPv6' ? 'ip6' : 'ip';
        const expected = await runFlatSteps(
          family,
          () => new NftCommandExecutor({ family: nftFamily, table: 'kube-proxy' }, commands),
          commands,
        );
        const got = await runChild(family);
        assert.match(got.reason, /netlink/);
        assert.equal(got.records.length, expected.length);
        for (const [i, e] of expected.entries()) {
          const g = got.records[i];
          assert.ok(g !== undefined);
          assert.equal(g.step, e.step);
          assert.ok(e.table.includes('map endpoints-'), `${e.step}: the table has the flat maps`);
          assert.equal(g.table, e.table, `${family} ${e.step}: the two tables differ`);
          assert.deepEqual([g.full, g.operations], [e.full, e.operations], e.step);
        }
        // The first backend wrote its partial syncs' elements over netlink; the one after the restart read no
        // element at all, and refilled every container over netlink (its own transaction, after the table's
        // objects through libnftables).
        const [first, restarted] = got.counts;
        assert.ok(first !== undefined && restarted !== undefined);
        assert.ok(first.netlinkTransactions >= 1, JSON.stringify(first));
        assert.equal(restarted.netlinkListings, 0, JSON.stringify(restarted));
        // …and the table's own objects over netlink too, without nft (which would fetch every element).
        assert.ok(restarted.netlinkTableListings >= 1, JSON.stringify(restarted));
        assert.equal(restarted.tableListingFallbacks, 0, JSON.stringify(restarted));
        assert.ok(restarted.netlinkTransactions >= 1, JSON.stringify(restarted));
      });
    }
  },
);
