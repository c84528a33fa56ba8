// Kubernetes' own [Conformance] Service tests (test/e2e/network/service.go), ported in test/upstream-e2e/, run
// against a two-node lab in nftables mode through the same harness as `npm run e2e:upstream`: one node:test per
// upstream test, named as upstream names it, failing with upstream's message. The other modes run from the npm
// script (docs/upstream-e2e.md has the results).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kernelOptions } from '../helpers/kernel.js';
import { KNOWN_LAB_GAPS, selectTests } from '../upstream-e2e/registry.js';
import { readySchedulableNodes, runOne } from '../upstream-e2e/runner.js';
import { startUpstreamLab, type UpstreamLab } from '../upstream-e2e/lab-session.js';
import type { NodeView } from '../upstream-e2e/registry-types.js';

const gate = kernelOptions(['ip', 'nft', 'iptables', 'curl', 'bash', 'kubectl']);
const { ported } = selectTests({ conformanceOnly: true });

describe(
  'upstream [Conformance] Service tests on the lab (nftables)',
  { skip: gate.skip, timeout: 30 * 60_000 },
  () => {
    let lab: UpstreamLab | undefined;
    let nodes: NodeView[] = [];
    const abort = new AbortController();

    before(
      async () => {
        lab = await startUpstreamLab('nftables', { signal: abort.signal });
        nodes = await readySchedulableNodes(lab.kube);
        assert.equal(nodes.length, 2, 'two ready, schedulable nodes');
      },
      { timeout: 25 * 60_000 },
    );

    after(async () => {
      abort.abort(new Error('suite finished'));
      await lab?.stop();
    });

    for (const upstream of ported) {
      // A known gap of the lab (not of the proxy) is a todo: it runs and reports, and does not fail the suite.
      const gap = KNOWN_LAB_GAPS[upstream.name];
      test(
        upstream.name,
        { timeout: 10 * 60_000, ...(gap ? { todo: `known lab gap: ${gap}` } : {}) },
        async () => {
          assert.ok(lab, 'the lab is up');
          const result = await runOne(lab.kube, upstream, nodes, { signal: abort.signal });
          assert.equal(result.outcome, 'passed', `${result.message ?? ''}\n${(result.log ?? []).join('\n')}`);
        },
      );
    }
  },
);
