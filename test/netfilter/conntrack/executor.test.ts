// The executor's real code against FakeConntrack, an in-memory conntrack table that answers as the tool does
// (the shared cases in table-cases.ts also run against the real tool in kernel.test.ts). Assertions are on
// outcomes: the pass's result, what it reported, which flows are left; never on the order of commands.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { FakeConntrack } from '../../../packages/agent/src/netfilter/conntrack/fake.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { endpoint, servicePort } from './fixtures.js';
import { pass, RECONCILE_CASES, remainingFlows, TOOL_CASES } from './table-cases.js';

function table(fake: FakeConntrack) {
  return {
    runner: fake,
    insert: async (f: Parameters<FakeConntrack['addUdpFlow']>[0]) => void fake.addUdpFlow(f),
  };
}

describe('FakeConntrack answers as the conntrack tool (cases shared with kernel.test.ts)', () => {
  for (const c of TOOL_CASES) test(c.name, () => c.run(table(new FakeConntrack())));
});

describe('reconcileConntrack over FakeConntrack (cases shared with kernel.test.ts)', () => {
  for (const c of RECONCILE_CASES) test(c.name, () => c.run(table(new FakeConntrack())));
});

const VIP = '198.18.100.10';
const NEW_EP = '198.18.1.2';
const OLD_EP = '198.18.1.7';
const DNS = servicePort('kube-system', 'dns', { clusterIP: VIP, port: 53 });
const OTHER = servicePort('ns', 'other', { clusterIP: '198.18.100.20', port: 53 });

/** A table with one live and one stale flow to DNS's VIP, and one stale flow to OTHER's (when asked). */
function tableWithStaleFlows(fake: FakeConntrack, withOther = false): FakeConntrack {
  const f = (sport: number, dst: string, ep: string) =>
    fake.addUdpFlow({
      origSrc: '198.18.0.1',
      origDst: dst,
      origSport: sport,
      origDport: 53,
      replySrc: ep,
      replySport: 5353,
    });
  f(40000, VIP, NEW_EP);
  f(40001, VIP, OLD_EP);
  if (withOther) f(40002, OTHER.clusterIP, NEW_EP);
  return fake;
}

const ENDPOINTS = [[endpoint(NEW_EP, 5353)], [endpoint(OLD_EP, 5353)]];

describe('reconcileConntrack: batch, fallback and failures', () => {
  test('the batch path: one -R file per pass, removed afterwards', async () => {
    const fake = tableWithStaleFlows(new FakeConntrack(), true);
    const { result, reports } = await pass(fake, 'IPv4', [DNS, OTHER], ENDPOINTS);
    assert.equal(result.error, undefined);
    assert.equal(result.deleted, 2);
    assert.deepEqual(reports, [['IPv4', 0, 2]]);
    assert.deepEqual(await remainingFlows(fake, 'IPv4'), [`40000→${NEW_EP}:5353`]);
    assert.equal(fake.batches.length, 1, 'both filters in one batch');
    assert.equal(fake.batches[0]!.lines.length, 2);
    assert.equal(existsSync(fake.batches[0]!.file), false, 'the batch file is removed afterwards');
  });

  test('conntrack older than 1.4.6 (no -R): one -D per filter, the same flows go', async () => {
    const fake = tableWithStaleFlows(new FakeConntrack({ version: '1.4.5' }), true);
    const { result, reports } = await pass(fake, 'IPv4', [DNS, OTHER], ENDPOINTS);
    assert.equal(result.error, undefined);
    assert.equal(result.deleted, 2);
    assert.deepEqual(reports, [['IPv4', 0, 2]]);
    assert.deepEqual(await remainingFlows(fake, 'IPv4'), [`40000→${NEW_EP}:5353`]);
    assert.deepEqual(fake.batches, []);
  });

  test('a failed batch falls back to one -D per filter', async () => {
    const fake = tableWithStaleFlows(new FakeConntrack(), true);
    fake.failNext('-R', 'Operation failed: Device or resource busy');
    const { result } = await pass(fake, 'IPv4', [DNS, OTHER], ENDPOINTS);
    assert.equal(result.error, undefined, 'the fallback succeeded');
    assert.equal(result.deleted, 2);
    assert.deepEqual(await remainingFlows(fake, 'IPv4'), [`40000→${NEW_EP}:5353`]);
  });

  test('a flow gone between listing and deletion is no error, with or without -R', async () => {
    for (const version of ['1.4.7', '1.4.5']) {
      const fake = tableWithStaleFlows(new FakeConntrack({ version }));
      fake.expireAfterNextListing((f) => f.reply.src === OLD_EP);
      const { result, reports } = await pass(fake, 'IPv4', [DNS], ENDPOINTS);
      assert.equal(result.error, undefined, version);
      assert.equal(result.deletions.length, 1, version);
      assert.equal(result.deleted, 0, version);
      assert.deepEqual(reports, [['IPv4', 0, 0]], version);
    }
  });

  test('a failing -D is reported with the tool’s words; the other filters still run', async () => {
    const fake = tableWithStaleFlows(new FakeConntrack({ version: '1.4.5' }), true);
    fake.failNext('-D');
    const { result: r, reports, logs } = await pass(fake, 'IPv4', [DNS, OTHER], ENDPOINTS);
    assert.match(r.error ?? '', /failed \(exit 1\): .*Operation not permitted/);
    assert.equal(r.deleted, 1);
    assert.deepEqual(
      reports.map(([, , deleted]) => deleted),
      [1],
    );
    assert.equal(fake.flows('IPv4').length, 2, 'one stale flow is left, with the live one');
    assert.ok(logs.some((l) => l.level === 'error'));
  });

  test('a failed listing aborts the pass with the tool’s words, deleting nothing', async () => {
    const fake = new FakeConntrack();
    fake.addUdpFlow({
      origSrc: '2001:db8::1',
      origDst: '2001:db8:100::10',
      origSport: 40000,
      origDport: 53,
      replySrc: '2001:db8:1::7',
      replySport: 5353,
    });
    fake.failNext('-L');
    const v6 = servicePort('kube-system', 'dns6', {
      family: 'IPv6',
      clusterIP: '2001:db8:100::10',
      port: 53,
    });
    const { result: r, reports, logs } = await pass(fake, 'IPv6', [v6], [[endpoint('2001:db8:1::2', 5353)]]);
    assert.match(r.error ?? '', /conntrack -L -f ipv6 failed \(exit 1\): .*Operation not permitted/);
    assert.equal(r.listed, 0);
    assert.deepEqual(
      reports.map(([family, , deleted]) => [family, deleted]),
      [['IPv6', 0]],
      'a failed pass is reported too',
    );
    assert.equal(fake.flows('IPv6').length, 1, 'nothing deleted');
    assert.ok(logs.some((l) => l.level === 'error'));
  });

  test('TCP flows to a UDP Service’s frontend are never touched', async () => {
    const fake = new FakeConntrack();
    fake.add({
      family: 'IPv4',
      protocol: 'tcp',
      original: { src: '198.18.0.1', dst: VIP, sport: 40000, dport: 53 },
      reply: { src: OLD_EP, dst: '198.18.0.1', sport: 5353, dport: 40000 },
    });
    const { result } = await pass(fake, 'IPv4', [DNS], ENDPOINTS);
    assert.equal(result.listed, 0, 'only UDP flows are listed');
    assert.equal(fake.flows().length, 1);
  });

  test('the pass reports the seconds it took', async () => {
    const clock = new FakeClock();
    const fake = tableWithStaleFlows(new FakeConntrack());
    // Each conntrack run takes 250 ms of the clock.
    const slow = {
      run: async (...a: Parameters<FakeConntrack['run']>) => {
        clock.advance(250);
        return fake.run(...a);
      },
    };
    const { result: r, reports } = await pass(slow, 'IPv4', [DNS], ENDPOINTS, [], clock);
    assert.equal(r.seconds, 0.5, 'a listing and one batch');
    assert.deepEqual(
      reports.map(([, seconds]) => seconds),
      [0.5],
    );
  });
});
