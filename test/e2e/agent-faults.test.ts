// The node agent through API-server faults, one proxy process for the whole suite (started once, as on a node that
// lives through them all): a cut watch connection, 410 Gone (as an ERROR event and as an HTTP status), a server
// that goes silent without closing, restarts with new resourceVersions (below and above ours), and a sync that
// keeps failing (a conflicting nft object the proxy cannot fix) so that /healthz turns 503 and back. After each,
// the kernel's table must equal `kube-proxy-ts render` of the final API state, and the proxy must still run.
// The same scenarios run once per nftables layout (--nftables-layout upstream, flat), each with its own proxy and
// namespaces, and the expected table is rendered with the same layout flag.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { TEST_WATCHDOG_ENV } from '../../packages/agent/src/cli/run.js';
import { NFTABLES_LAYOUTS } from '../../packages/agent/src/config/nftables-layout.js';
import type { NftablesLayoutName } from '../../packages/agent/src/config/nftables-layout.js';
import { kernelOptions } from '../helpers/kernel.js';
import { AgentLab } from './helpers/agent-lab.js';
import { parseExposition, valueOf } from './helpers/agent-metrics.js';
import { PATHS, webService } from './helpers/agent-objects.js';
import type { AgentProcess } from './helpers/agent-process.js';
import { inNs, replaceWithConflictingTable } from './helpers/agent-table.js';
import { until } from './helpers/agent-wait.js';

const KERNEL = kernelOptions(['ip', 'nft', 'curl']);

// syncPeriod 2 s makes the health timeout (2 × syncPeriod) 4 s; the watchdog 3 s makes silence visible quickly.
const SYNC_FLAGS = ['--iptables-sync-period=2s', '--iptables-min-sync-period=100ms'];
const WATCHDOG_MS = 3000;

/**
 * Every collection the agent watches: the fake serves any path, so the agent also follows ServiceCIDRs (none
 * exist here), and a fault must find that watch established too.
 */
const WATCHED_PATHS = [...Object.values(PATHS), '/apis/networking.k8s.io/v1/servicecidrs'];

function faultSuite(layout: NftablesLayoutName): void {
  describe(`kube-proxy-ts through API-server faults (--nftables-layout ${layout})`, KERNEL, () => {
    let lab: AgentLab;
    let proxy: AgentProcess;
    let serial = 0;
    const RECOVER_MS = 60_000;

    /** A fresh Service + slice with a ClusterIP nobody else uses. */
    function nextWeb(): ReturnType<typeof webService> {
      serial += 1;
      return webService(`svc${serial}`, `198.19.1.${serial}`, [`198.18.10.${100 + serial}`]);
    }

    /** Services the API server holds, oldest first. */
    const shown: ReturnType<typeof webService>[] = [];

    function show(w: ReturnType<typeof webService>): void {
      lab.putService(w);
      shown.push(w);
    }

    /** Removes the oldest Service and its slice: two delete events. */
    function hideOldest(): void {
      const w = shown.shift();
      assert.ok(w, 'the suite should still hold a Service to remove');
      lab.remove(PATHS.endpointSlices, w.slice);
      lab.remove(PATHS.services, w.service);
    }

    /** A labelled counter that was never incremented has no sample yet (as in client_golang): read it as 0. */
    function failures(e: ReturnType<typeof parseExposition>): number {
      const labels = { ip_family: 'IPv4' };
      const name = 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total';
      return e.samples.some((s) => s.name === name) ? valueOf(e, name, labels) : 0;
    }

    async function metrics(): Promise<ReturnType<typeof parseExposition>> {
      const m = await lab.get('http://127.0.0.1:10249/metrics');
      assert.equal(m.status, 200);
      return parseExposition(m.body);
    }

    function logged(re: RegExp): number {
      return proxy.matching((r) => re.test(r.msg)).length;
    }

    /**
     * These faults need no backoff: a stream that had worked and breaks is resumed at once, the first 410 relists at
     * once, a watchdog abort reconnects at once (client-go alike). A backoff would show as "… failed; retrying".
     */
    function assertNoBackoffSince(before: number): void {
      const backoffs = proxy.matching((r) => / failed; retrying$/.test(r.msg)).slice(before);
      assert.deepEqual(backoffs, [], 'the proxy backed off where it should have resumed at once');
    }

    function backoffsSoFar(): number {
      return logged(/ failed; retrying$/);
    }

    /**
     * Makes every watch an established one before a fault: open, and past its first event (a BOOKMARK, as real API
     * servers send about once a minute). A watch cut before it ever worked is backed off on purpose (client-go's
     * "very short watch"), which is not the case these tests are about.
     */
    async function establishWatches(): Promise<void> {
      for (const path of WATCHED_PATHS) {
        await lab.api.waitForWatchers(path, 1, RECOVER_MS);
        lab.api.bookmark(path);
      }
      // Let the bookmarks cross both relays before anything cuts the connections (a cut drops unsent bytes). No
      // event tells the test the proxy has read them; if 500 ms were too little, the watch would be backed off as
      // a very short one and the recovery checks below would fail, never pass wrongly.
      await delay(500);
    }

    before(async () => {
      lab = await AgentLab.start({ layout });
      show(nextWeb());
      show(nextWeb());
      proxy = lab.startProxy(lab.flags(...SYNC_FLAGS), { [TEST_WATCHDOG_ENV]: String(WATCHDOG_MS) });
      await lab.expectRules(proxy, RECOVER_MS);
    });

    after(async () => {
      await lab?.close();
    });

    test('the watch connection is cut: it resumes, and changes made meanwhile arrive', async () => {
      const watchesBefore = lab.api.watchesOf(PATHS.services).length;
      const backoffs = backoffsSoFar();
      await establishWatches();
      lab.api.cutWatches();
      show(nextWeb()); // while the proxy reconnects
      await lab.expectRules(proxy, RECOVER_MS);
      assert.ok(lab.api.watchesOf(PATHS.services).length > watchesBefore, 'no new watch after the cut');
      assertNoBackoffSince(backoffs);
      assert.ok(proxy.running);
    });

    for (const goneMode of ['event', 'status'] as const) {
      test(`410 Gone (${goneMode === 'event' ? 'an ERROR event' : 'HTTP 410'}): it relists and converges`, async () => {
        lab.api.goneMode = goneMode;
        const listsBefore = lab.api.listsOf(PATHS.services).length;
        const relistsLogged = logged(/410 Gone/);
        const backoffs = backoffsSoFar();
        await establishWatches();
        // Changes the open watches never see, then history is compacted and the watches cut: resuming from the
        // last resourceVersion is refused, and only a relist (its difference with the old store) can deliver them.
        lab.api.silenceWatches();
        show(nextWeb());
        hideOldest();
        lab.api.compact();
        lab.api.cutWatches();
        try {
          await lab.expectRules(proxy, RECOVER_MS);
        } finally {
          lab.api.goneMode = 'event';
        }
        assert.ok(lab.api.listsOf(PATHS.services).length > listsBefore, 'no relist of services');
        assert.ok(logged(/410 Gone/) > relistsLogged, 'no "410 Gone; relisting" in the log');
        assertNoBackoffSince(backoffs);
        assert.ok(proxy.running);
      });
    }

    test('the server goes silent without closing: the watchdog reconnects and the changes arrive', async () => {
      const silentLogged = logged(/silent for too long/);
      const backoffs = backoffsSoFar();
      await establishWatches();
      lab.api.silenceWatches();
      show(nextWeb());
      await lab.expectRules(proxy, RECOVER_MS);
      assert.ok(logged(/silent for too long/) > silentLogged, 'the watchdog never fired');
      assertNoBackoffSince(backoffs);
      assert.ok(proxy.running);
    });

    for (const direction of ['below', 'above'] as const) {
      test(`the server restarts with resourceVersions ${direction} ours and different objects: it relists`, async () => {
        const listsBefore = lab.api.listsOf(PATHS.endpointSlices).length;
        const backoffs = backoffsSoFar();
        await establishWatches();
        const current = Number(lab.api.resourceVersion);
        const added = nextWeb();
        const victim = shown.shift();
        assert.ok(victim, 'the suite should still hold a Service to remove');
        shown.push(added);
        // No watch event carries these changes: only the relist after the restart can show them.
        lab.restartApi(direction === 'below' ? 1 : current + 10_000, {
          put: [
            [PATHS.services, added.service],
            [PATHS.endpointSlices, added.slice],
          ],
          remove: [
            [PATHS.services, victim.service],
            [PATHS.endpointSlices, victim.slice],
          ],
        });
        await lab.expectRules(proxy, RECOVER_MS);
        assert.ok(lab.api.listsOf(PATHS.endpointSlices).length > listsBefore, 'no relist of endpoint slices');
        assertNoBackoffSince(backoffs);
        assert.ok(proxy.running);
      });
    }

    test('a sync that keeps failing turns /healthz 503 past 2 × syncPeriod, and 200 again once it succeeds', async () => {
      assert.equal((await lab.get('http://127.0.0.1:10256/healthz')).status, 200);
      const failuresBefore = failures(await metrics());
      // Someone replaces the table with one whose service-ips map has another type, which the proxy cannot fix.
      await replaceWithConflictingTable(lab.node);
      show(nextWeb()); // an update that cannot be programmed

      let unhealthy: { status: number; body: string } | undefined;
      await until(
        async () => {
          const h = await lab.get('http://127.0.0.1:10256/healthz');
          if (h.status === 503) unhealthy = h;
          return unhealthy !== undefined;
        },
        '/healthz to answer 503',
        30_000,
        () => proxy.tail(10),
      );
      const body = JSON.parse(unhealthy?.body ?? '{}') as {
        healthy?: boolean;
        status?: Record<string, { healthy?: boolean }>;
      };
      assert.equal(body.healthy, false);
      assert.equal(body.status?.IPv4?.healthy, false);
      assert.equal((await lab.get('http://127.0.0.1:10256/livez')).status, 503);
      const failuresNow = failures(await metrics());
      assert.ok(
        failuresNow >= failuresBefore + 2,
        `sync failures ${failuresBefore} → ${failuresNow}: no retries`,
      );
      assert.ok(valueOf(await metrics(), 'kubeproxy_proxy_healthz_total', { code: '503' }) >= 1);
      assert.ok(proxy.running);

      // The conflict goes away: the next retry (a full sync) programs everything and health comes back.
      const release = await inNs(lab.node, 'nft', ['delete', 'table', 'ip', 'kube-proxy']);
      assert.equal(release.code, 0, release.stderr);
      await until(
        async () => (await lab.get('http://127.0.0.1:10256/healthz')).status === 200,
        '/healthz to answer 200 again',
        30_000,
        () => proxy.tail(10),
      );
      await lab.expectRules(proxy, RECOVER_MS);
      assert.ok(proxy.running);
    });

    test('none of the faults made the proxy exit', () => {
      assert.ok(proxy.running, proxy.tail());
      assert.equal(logged(/^fatal$/), 0);
    });
  });
}

for (const layout of NFTABLES_LAYOUTS) faultSuite(layout);
