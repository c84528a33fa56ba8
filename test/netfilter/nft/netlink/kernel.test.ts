// The netlink element writer against `nft -f` in the real kernel: the same operations (scenario.ts: the flat
// layout's cold start and a partial sync for an IPv4 and an IPv6 table, flushes, deletes, creates, and batches
// that fail) written through netlink by a child process inside one namespace (netlink-child.ts) and through
// `nft -f` in another must leave `nft list table` printing the same after every step, and fail the same way (the
// same error class and operation). A failed batch changes nothing. Listing a set through netlink gives what our
// JSON reader makes of `nft --json list set`.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { netnsCommandRunner } from '../../../../packages/agent/src/netfilter/command.js';
import type {
  NetlinkApplyResult,
  NetlinkElementError,
} from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';
import { kernelNamespaces, runInNamespace } from '../../../helpers/kernel.js';
import type { StepRecord } from './scenario.js';
import { expectedFailures, nftApplier, runScenario } from './scenario.js';

const suite = kernelNamespaces(['netlink', 'nft']);
const [netlinkNs, nftNs] = suite.names;

interface ChildReport {
  readonly records: StepRecord[];
  readonly errors: NetlinkElementError[];
  readonly listings: { set: string; netlink: unknown; json: unknown }[];
  readonly invalid?: NetlinkApplyResult;
}

/** Runs netlink-child.ts inside `ns` and returns what it printed. */
function runChild(ns: string): Promise<ChildReport> {
  return runInNamespace(ns, new URL('./netlink-child.ts', import.meta.url));
}

describe('the netlink element writer against nft -f', suite.options, () => {
  let netlink: ChildReport;
  let nft: StepRecord[];

  suite.hooks();
  before(async () => {
    const commands = netnsCommandRunner(nftNs);
    [netlink, nft] = await Promise.all([
      runChild(netlinkNs),
      runScenario(nftApplier(commands), commands).then((r) => r.records),
    ]);
  });

  test('every step leaves the same table and reports the same outcome', () => {
    assert.deepEqual(
      netlink.records.map((r) => r.step),
      nft.map((r) => r.step),
    );
    for (const [i, expected] of nft.entries()) {
      const got = netlink.records[i] as StepRecord;
      assert.deepEqual(got.outcome, expected.outcome, `${expected.step}: outcome`);
      assert.equal(got.table, expected.table, `${expected.step}: nft list table`);
    }
  });

  test('the comparison is not vacuous: the tables hold every kind of element', () => {
    for (const family of ['IPv4', 'IPv6']) {
      const cold = nft.find((r) => r.step === `${family} cold start`);
      assert.deepEqual(cold?.outcome, { ok: true });
      // Most of the cold start, and of the partial sync, went to the writer.
      assert.ok((cold?.viaElements ?? 0) > 300, `${family}: ${cold?.viaElements} operations through netlink`);
      const table = cold?.table ?? '';
      for (const set of [
        'service-ips',
        'service-nodeports',
        'cluster-dispatch',
        'local-dispatch',
        'endpoints-tcp',
        'nodeport-endpoints-tcp',
        'endpoints-udp',
        'endpoints-sctp',
        'hairpin-connections',
        'firewall-frontends',
        'no-endpoint-services',
        'no-endpoint-nodeports',
      ]) {
        const body = new RegExp(`(?:set|map) ${set} \\{[^}]*elements = \\{`, 's');
        assert.match(table, body, `${family} ${set} has elements`);
      }
      assert.match(table, /comment "ns\/[a-z]+:[a-z]+"/, `${family}: element comments`);
      assert.match(table, /: goto dispatch-tcp-200/, `${family}: verdicts`);
      const endpoints = (/map endpoints-tcp \{[^}]*\}/s.exec(table)?.[0] ?? '').split(' : ').length - 1;
      assert.ok(endpoints >= 200, `${family}: ${endpoints} endpoint elements`);
      const partial = nft.find((r) => r.step === `${family} partial sync`);
      assert.notEqual(partial?.table, table, `${family}: the partial sync changed the table`);
      assert.ok((partial?.viaElements ?? 0) > 100, `${family}: ${partial?.viaElements} through netlink`);
      assert.match(partial?.table ?? '', /: goto dispatch-tcp-120/);
    }
  });

  test('a failing batch changes nothing and names the operation that failed', () => {
    const failures = expectedFailures();
    assert.equal(failures.size, 8);
    for (const [step, expected] of failures) {
      const i = netlink.records.findIndex((r) => r.step === step);
      const got = netlink.records[i] as StepRecord;
      assert.deepEqual(got.outcome, expected, step);
      assert.equal(got.table, netlink.records[i - 1]?.table, `${step}: the table is as before`);
    }
    // The kernel's words for it, as nft prints them.
    const texts = new Set(netlink.errors.map((e) => `${e.code} ${e.errno} ${e.errnoText}`));
    assert.ok(texts.has('NotFound 2 No such file or directory'), [...texts].join('; '));
    assert.ok(texts.has('Exists 17 File exists'), [...texts].join('; '));
    for (const e of netlink.errors)
      assert.match(e.message, /^nf_tables refused (add|create|delete) element \{ /);
    // Bad text never reaches the kernel: an error value naming the operation.
    assert.ok(netlink.invalid && !netlink.invalid.ok);
    assert.equal(netlink.invalid.error.code, 'Invalid');
    assert.equal(netlink.invalid.error.index, 1);
    assert.match(netlink.invalid.error.message, /"198\.18\.250\.256" is not an IPv4 address/);
  });

  test('listing through netlink equals the JSON listing of every set and map', () => {
    let elements = 0;
    let comments = 0;
    let verdicts = 0;
    for (const l of netlink.listings) {
      // A set the scenario does not have (no-such-set; nodeport-ips, which the setup adds and deletes): both say so.
      if (l.set.endsWith('no-such-set') || (typeof l.json === 'string' && /No such file/.test(l.json))) {
        assert.deepEqual(
          { code: (l.netlink as NetlinkElementError).code, errno: (l.netlink as NetlinkElementError).errno },
          { code: 'NotFound', errno: 2 },
        );
        continue;
      }
      assert.ok(Array.isArray(l.json), `${l.set}: ${JSON.stringify(l.json)}`);
      assert.deepEqual(l.netlink, l.json, l.set);
      for (const e of l.json as { value?: string; comment?: string }[]) {
        elements++;
        if (e.comment !== undefined) comments++;
        if (e.value?.startsWith('goto ')) verdicts++;
      }
    }
    assert.ok(
      elements > 300 && comments > 3 && verdicts > 10,
      `${elements} elements, ${comments} comments, ${verdicts} gotos`,
    );
  });
});
