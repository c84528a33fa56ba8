// A KubeProxyConfiguration the proxy must refuse at start: an unknown mode, a negative period, a bad address. The
// process exits non-zero with a message naming the field, and nothing is programmed (no kube-proxy table).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelOptions } from '../helpers/kernel.js';
import { AgentLab, kubeProxyConfiguration } from './helpers/agent-lab.js';

const KERNEL = kernelOptions(['ip', 'nft']);

const CASES = [
  { what: 'an unknown mode', lines: ['mode: nftabels'], field: 'mode' },
  {
    what: 'a negative period',
    lines: ['mode: nftables', 'nftables:', '  syncPeriod: -30s'],
    field: 'nftables.syncPeriod',
  },
  {
    what: 'a bad address',
    lines: ['mode: nftables', 'healthzBindAddress: 0.0.0.0:99999'],
    field: 'healthzBindAddress',
  },
] as const;

test(
  'a configuration file with a bad field is refused at start, naming the field, and nothing is programmed',
  KERNEL,
  async () => {
    await AgentLab.with(async (lab) => {
      // All three at once: each is its own process, and none may touch the namespace's rules.
      const runs = CASES.map((c, i) => {
        const path = lab.file(`bad-${i}.yaml`, kubeProxyConfiguration(lab.kubeconfig, c.lines));
        return { c, proxy: lab.startProxy(['--config', path]) };
      });
      for (const { c, proxy } of runs) {
        const exit = await proxy.exitWithin(60_000);
        assert.deepEqual(exit, { code: 1, signal: null }, `${c.what}: ${proxy.stderr}`);
        assert.match(proxy.stderr, /refusing to start; nothing was programmed/, c.what);
        // One problem per line, "  <field path>: <what is wrong>" (src/config formatProblem).
        const named = proxy.stderr.split('\n').filter((l) => l.trimStart().startsWith(`${c.field}: `));
        assert.ok(named.length > 0, `${c.what}: no message names ${c.field}:\n${proxy.stderr}`);
      }
      assert.equal(await lab.table(), undefined, 'a refused start left a kube-proxy table behind');
    });
  },
);
