// The real `ipset` (sets live per network namespace): each case of cases.ts runs in a fresh namespace of the
// test's own, never the root one, and again on a fresh FakeIPSet; the two must observe the same (saved sets,
// errors and the lines they name). Namespaces are removed in `finally`, and the run's leftovers swept first.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { netnsCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { FakeIPSet } from '../../../packages/agent/src/netfilter/ipset/fake.js';
import { kernelOptions, runPrefix, sweepNamespaces } from '../../helpers/kernel.js';
import type { IPSetCase } from './cases.js';
import { IPSET_CASES } from './cases.js';

const prefix = runPrefix();

async function inNamespace(c: IPSetCase, index: number): Promise<unknown> {
  const ns = `${prefix}-ipset${index}`;
  execFileSync('ip', ['netns', 'add', ns]);
  try {
    return await c.run(netnsCommandRunner(ns));
  } finally {
    execFileSync('ip', ['netns', 'del', ns]);
  }
}

describe('the ipset tool answers as FakeIPSet does (cases shared with fake.test.ts)', () => {
  const options = kernelOptions(['ip', 'ipset']);
  if (!options.skip) {
    sweepNamespaces(prefix);
    after(() => sweepNamespaces(prefix));
  }
  IPSET_CASES.forEach((c, i) =>
    test(c.name, options, async () => {
      const kernel = await inNamespace(c, i);
      const fake = await c.run(new FakeIPSet());
      assert.deepEqual(fake, kernel, 'FakeIPSet observed what the kernel did');
    }),
  );
});
