// Both proxy modes on a second kernel: one dataplane scenario (a ClusterIP Service load-balanced over three
// backends on two nodes, IPv4 and IPv6) run by test/dataplane/scenarios.test.ts inside a guest on Debian 12's
// kernel (6.1), for nftables mode and for iptables mode on legacy iptables (the guest's alternatives point at it;
// the host's suite runs iptables-nft). Any missing kernel module fails the first sync, so this also guards the
// initramfs's module lists. A few minutes under emulation; the whole suite in a guest is the documented command
// (docs/vm-nodes.md): npm run test:guest -- --env KPTS_DATAPLANE_BACKENDS=… test/dataplane/scenarios.test.ts
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GUEST_TOOLS } from './guest-tools.js';
import { kernelOptions } from '../helpers/kernel.js';
import { runTestFiles, withTestGuest } from './in-guest.js';

const TOOLS = [...GUEST_TOOLS, 'ip', 'nft', 'iptables-legacy'];
const SCENARIO = 'a ClusterIP Service with three backends: 60 requests from a pod reach all three';

describe('the dataplane scenarios in a guest on Debian kernel', kernelOptions(TOOLS), () => {
  test('nftables and iptables (legacy) mode pass a ClusterIP scenario on 6.1, both families', async () => {
    await withTestGuest({}, async (guest) => {
      assert.match(guest.release, /^6\.1\./, 'Debian 12 kernel in the guest');
      const r = await runTestFiles(guest, {
        files: ['test/dataplane/scenarios.test.ts'],
        env: { KPTS_DATAPLANE_BACKENDS: 'nftables,iptables' },
        iptables: 'legacy',
        testNamePattern: `^${SCENARIO.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`,
        // The run's own ceiling (the node:test timeout of this file is the suite's, 10 minutes).
        timeoutMs: 9 * 60_000,
      });
      console.log(
        `# vm: ${guest.release}, ${r.iptablesVersion ?? ''}: boot ${guest.bootMs} ms, run ${(r.runMs / 1000).toFixed(1)} s, ` +
          `QEMU RSS ${Math.round(guest.rssKiB() / 1024)} MiB`,
      );
      assert.match(r.iptablesVersion ?? '', /\(legacy\)/, 'the guest iptables is legacy');
      assert.equal(r.code, 0, `the scenarios in the guest failed:\n${r.output}`);
      const passed = r.output.split('\n').filter((l) => l.includes(`✔ ${SCENARIO}`));
      assert.equal(passed.length, 4, `2 modes x 2 families passed:\n${r.output}`);
      assert.match(r.output, /ℹ fail 0\n/);
    });
  });
});
