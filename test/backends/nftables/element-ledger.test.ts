// The element ledger's runs (a flat port's endpoint entries, kept as one prefix and one string of values): a
// partial sync writes only the indexes whose value changed, a run shared by two ports stays until both let go, and
// a full sync writes every element of every run onto emptied containers.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ElementLedger,
  KernelUpdates,
  RUN_SEPARATOR,
  Touched,
} from '../../../packages/agent/src/backends/nftables/element-ledger.js';
import type { ElementRun } from '../../../packages/agent/src/backends/nftables/element-ledger.js';
import type { NftElement, NftOperation } from '../../../packages/agent/src/netfilter/nft/objects.js';

const MAP = 'endpoints-tcp';
const FRONTEND = '198.18.128.1 . tcp . 80';

function run(...values: string[]): ElementRun {
  return { set: MAP, prefix: FRONTEND, values: values.join(RUN_SEPARATOR) };
}

const verdict: NftElement = {
  kind: 'element',
  set: 'service-ips',
  key: ['198.18.128.1', 'tcp', '80'],
  value: ['goto dispatch-tcp-2'],
};

function text(op: NftOperation): string {
  const e = op.object as NftElement;
  const value = e.value ? ` : ${e.value.join(' . ')}` : '';
  return `${op.verb} ${e.set} ${e.key.join(' . ')}${value}`;
}

/** A ledger whose kernel holds `claims` after a committed full sync; returns each claim's handle. */
function committed(...claims: [readonly NftElement[], readonly ElementRun[]][]): {
  ledger: ElementLedger;
  handles: string[][];
  written: string[];
} {
  const ledger = new ElementLedger();
  ledger.resetDesired();
  const handles = claims.map(([elements, runs]) => ledger.claim(elements, runs, undefined));
  const full = ledger.fullDiff([MAP, 'service-ips']);
  const written = [...full.make()].map(text);
  assert.equal(full.count, written.length, 'the count is what make() writes');
  ledger.kernelIsDesired();
  return { ledger, handles, written };
}

/** One partial sync: release `handle`, claim the new rendering, diff, commit; the operations in order. */
function partial(
  ledger: ElementLedger,
  handle: string[] | undefined,
  elements: readonly NftElement[],
  runs: readonly ElementRun[],
): { ops: string[]; handle: string[] } {
  const touched = new Touched();
  if (handle) ledger.release(handle, touched);
  const next = ledger.claim(elements, runs, touched);
  const adds: NftOperation[] = [];
  const deletes: NftOperation[] = [];
  const updates = new KernelUpdates();
  ledger.diff(touched, adds, deletes, updates);
  ledger.apply(updates);
  return { ops: [...adds, ...deletes].map(text), handle: next };
}

describe('element ledger: runs', () => {
  test('a full sync writes every index of a run as its own element, after none was read', () => {
    const { written } = committed([[verdict], [run('198.19.0.1 . 8080', '198.19.0.2 . 8080')]]);
    assert.deepEqual(written, [
      `add ${MAP} ${FRONTEND} . 0 : 198.19.0.1 . 8080`,
      `add ${MAP} ${FRONTEND} . 1 : 198.19.0.2 . 8080`,
      'add service-ips 198.18.128.1 . tcp . 80 : goto dispatch-tcp-2',
    ]);
  });

  test('a partial sync writes only the indexes that changed: replaced, grown, shrunk, unchanged', () => {
    const { ledger, handles } = committed([[verdict], [run('a . 1', 'b . 1')]]);
    let step = partial(ledger, handles[0], [verdict], [run('a . 1', 'c . 1')]);
    assert.deepEqual(step.ops, [`delete ${MAP} ${FRONTEND} . 1`, `add ${MAP} ${FRONTEND} . 1 : c . 1`]);
    step = partial(ledger, step.handle, [verdict], [run('a . 1', 'c . 1', 'd . 1')]);
    assert.deepEqual(step.ops, [`add ${MAP} ${FRONTEND} . 2 : d . 1`]);
    step = partial(ledger, step.handle, [verdict], [run('a . 1')]);
    assert.deepEqual(step.ops, [`delete ${MAP} ${FRONTEND} . 1`, `delete ${MAP} ${FRONTEND} . 2`]);
    step = partial(ledger, step.handle, [verdict], [run('a . 1')]);
    assert.deepEqual(step.ops, [], 'rendered again as it was: nothing to write');
    step = partial(ledger, step.handle, [], []);
    assert.deepEqual(step.ops, [
      `delete ${MAP} ${FRONTEND} . 0`,
      'delete service-ips 198.18.128.1 . tcp . 80',
    ]);
    // What the kernel holds now is what the ledger says: a new claim is all adds.
    step = partial(ledger, undefined, [], [run('e . 1')]);
    assert.deepEqual(step.ops, [`add ${MAP} ${FRONTEND} . 0 : e . 1`]);
  });

  test('a run two ports claim stays until both released it; the first claim decides its values', () => {
    const { ledger, handles } = committed([[], [run('a . 1')]], [[], [run('b . 1')]]);
    const first = partial(ledger, handles[0], [], []);
    assert.deepEqual(first.ops, [], 'the other port still claims the run');
    const second = partial(ledger, handles[1], [], []);
    assert.deepEqual(second.ops, [`delete ${MAP} ${FRONTEND} . 0`]);
  });

  test('a partial sync before a full sync committed is refused', () => {
    const ledger = new ElementLedger();
    const touched = new Touched();
    ledger.claim([], [run('a . 1')], touched);
    assert.throws(
      () => ledger.diff(touched, [], [], new KernelUpdates()),
      /partial sync before a full sync committed/,
    );
  });
});
