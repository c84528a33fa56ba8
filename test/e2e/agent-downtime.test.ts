// The node agent started while its API server is down, which stays down for 30 s: the proxy keeps retrying and
// does not exit, programs nothing while it knows no Node, answers /healthz 503 (node not known), and once the server
// is back it programs exactly what the API holds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { kernelOptions } from '../helpers/kernel.js';
import { AgentLab } from './helpers/agent-lab.js';
import { PATHS, webService } from './helpers/agent-objects.js';

const KERNEL = kernelOptions(['ip', 'nft', 'curl']);
const DOWNTIME_MS = 30_000;

test(
  'the API server is down for 30 s at start: the proxy waits it out and then programs everything',
  KERNEL,
  async () => {
    await AgentLab.with(async (lab) => {
      const web = webService('web', '198.19.2.10', ['198.18.10.20', '198.18.10.21'], 30090);
      lab.putService(web);
      await lab.api.down();
      const proxy = lab.startProxy(lab.flags());

      // The outage itself is the scenario: 30 s of refused connections, checked once a second.
      const downUntil = Date.now() + DOWNTIME_MS;
      let sawHealthz = false;
      while (Date.now() < downUntil) {
        assert.ok(proxy.running, `the proxy exited during the outage\n${proxy.tail()}`);
        assert.equal(await lab.table(), undefined, 'rules programmed before any Node or Service was known');
        const h = await lab.get('http://127.0.0.1:10256/healthz');
        if (h.status !== 0) {
          // Up before the Node is known: 503, the node is not eligible for traffic yet.
          assert.equal(h.status, 503, h.body);
          assert.equal((JSON.parse(h.body) as { nodeEligible?: unknown }).nodeEligible, false);
          sawHealthz = true;
        }
        await delay(1000); // the pace of the checks through the outage, not a wait
      }
      assert.ok(sawHealthz, 'the health server never answered during the outage');
      assert.ok(
        proxy.matching((r) => r.msg === 'list failed; retrying').length >= 2,
        `no retries logged during the outage\n${proxy.tail()}`,
      );

      // A change made while it was down is part of the state it must reach.
      const web2 = webService('web', '198.19.2.10', ['198.18.10.21', '198.18.10.22'], 30090);
      lab.put(PATHS.endpointSlices, web2.slice);
      await lab.api.up();
      // The reflectors back off up to 30 s (× jitter) between attempts, as client-go does: allow for the longest.
      await lab.expectRules(proxy, 90_000);
      assert.ok(proxy.running);
      assert.equal((await lab.get('http://127.0.0.1:10256/healthz')).status, 200);
    });
  },
);
