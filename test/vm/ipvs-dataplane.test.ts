// ipvs mode carries real packets on a kernel with IP_VS: test/dataplane/scenarios.test.ts's ipvs entry run inside a
// guest on Debian 12's kernel (this machine's has no IP_VS, so there the ipvs scenarios skip, saying so). Three
// scenarios, both families: a ClusterIP over three backends, a NodePort from outside (masqueraded: IPVS's
// packets must be conntracked, vs/conntrack=1), and internalTrafficPolicy Local, where a node without a local
// endpoint refuses rather than drops (upstream's IPVS proxier leaves that virtual server without real servers). The whole suite in a guest is the documented
// command: npm run test:guest -- --env KPTS_DATAPLANE_BACKENDS=ipvs test/dataplane/scenarios.test.ts
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GUEST_TOOLS } from './guest-tools.js';
import { kernelOptions } from '../helpers/kernel.js';
import { runTestFiles, withTestGuest } from './in-guest.js';

const TOOLS = [...GUEST_TOOLS, 'ip', 'ipset', 'ipvsadm', 'iptables-legacy'];
const SCENARIOS = [
  'a ClusterIP Service with three backends: 60 requests from a pod reach all three',
  'a NodePort answers a client outside the cluster, on every node, masqueraded',
  'internalTrafficPolicy Local: a node with a local endpoint uses only it, one without drops',
];
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('ipvs mode in a guest on Debian kernel', kernelOptions(TOOLS), () => {
  test('ClusterIP, NodePort and internalTrafficPolicy Local scenarios pass in ipvs mode, both families', async () => {
    await withTestGuest({}, async (guest) => {
      assert.match(guest.release, /^6\.1\./, 'Debian 12 kernel in the guest');
      const r = await runTestFiles(guest, {
        files: ['test/dataplane/scenarios.test.ts'],
        env: { KPTS_DATAPLANE_BACKENDS: 'ipvs' },
        iptables: 'legacy',
        testNamePattern: `^(${SCENARIOS.map(escape).join('|')})$`,
        timeoutMs: 9 * 60_000,
      });
      console.log(
        `# vm: ${guest.release}: boot ${guest.bootMs} ms, run ${(r.runMs / 1000).toFixed(1)} s, ` +
          `QEMU RSS ${Math.round(guest.rssKiB() / 1024)} MiB`,
      );
      assert.equal(r.code, 0, `the ipvs scenarios in the guest failed:\n${r.output}`);
      for (const s of SCENARIOS) {
        const passed = r.output.split('\n').filter((l) => l.includes(`✔ ${s}`));
        assert.equal(passed.length, 2, `${s}: passed in both families:\n${r.output}`);
      }
      assert.match(r.output, /ℹ fail 0\n/);
      assert.doesNotMatch(r.output, /skip: this kernel has no IP_VS/, 'the guest kernel has IP_VS');
    });
  });
});
