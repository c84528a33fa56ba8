// The page on its own, in Debian's chromium (no lab): served by the real server from a made-up snapshot, its
// modules load with no script error, it draws the snapshot's objects, charts and ruleset, and a change pushed
// afterwards shows up. Every import between the page's files names a file the server serves.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { assetsDir, loadAssets, PAGE_FILES } from '../../../packages/lab/src/web/assets.js';
import { EventHub, type WebSnapshot } from '../../../packages/lab/src/web/hub.js';
import { startWebServer, type WebServer } from '../../../packages/lab/src/web/http.js';
import { EXPERIMENTS } from '../../../packages/lab/src/web/actions.js';
import { diffLines } from '../../../packages/lab/src/web/line-diff.js';
import { kernelOptions } from '../../helpers/kernel.js';
import { launchBrowser, type Browser } from '../../e2e/helpers/browser.js';

test('every module the page imports is a file the server serves', () => {
  const served = new Set(PAGE_FILES as readonly string[]);
  for (const f of PAGE_FILES.filter((x) => x.endsWith('.js'))) {
    const text = readFileSync(join(assetsDir(), f), 'utf8');
    for (const m of text.matchAll(/from '\.\/([\w-]+\.js)'/g))
      assert.ok(served.has(m[1] ?? ''), `${f} imports ${m[1] ?? ''}, which is not in PAGE_FILES`);
  }
  const { assets, indexHtml } = loadAssets();
  for (const m of indexHtml.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g))
    assert.ok(assets.has(m[1] ?? ''), `index.html loads ${m[1] ?? ''}`);
});

const gate = kernelOptions(['chromium']);

describe('the page, drawn from a snapshot', { skip: gate.skip }, () => {
  const now = Date.now();
  const before1 = ['table ip kube-proxy {', '  chain a {', '  }', '}'];
  const after1 = ['table ip kube-proxy {', '  chain a {', '    dnat to 198.18.10.2:8080', '  }', '}'];
  const snapshot: WebSnapshot = {
    lab: {
      prefix: 'kptspage',
      nodes: [{ name: 'worker', namespace: 'kptspage-worker' }],
      startedAt: new Date(now).toISOString(),
      windowMs: 300_000,
    },
    objects: [
      {
        kind: 'Node',
        key: 'Node/worker',
        name: 'worker',
        nodeIPs: '198.18.0.11',
        podCIDRs: '198.18.11.0/24',
        ready: true,
      },
      {
        kind: 'Pod',
        key: 'Pod/svc/web-1',
        namespace: 'svc',
        name: 'web-1',
        node: 'worker',
        ip: '198.18.11.2',
        phase: 'Running',
        ready: true,
        terminating: false,
        app: 'web',
      },
      {
        kind: 'Service',
        key: 'Service/svc/web',
        namespace: 'svc',
        name: 'web',
        type: 'ClusterIP',
        clusterIP: '198.19.0.2',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: '8080' }],
        internalTrafficPolicy: 'Cluster',
      },
      {
        kind: 'EndpointSlice',
        key: 'EndpointSlice/svc/web-abc',
        namespace: 'svc',
        name: 'web-abc',
        service: 'web',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: [
          {
            address: '198.18.11.2',
            pod: 'web-1',
            node: 'worker',
            ready: true,
            serving: true,
            terminating: false,
          },
        ],
      },
    ],
    samples: {
      worker: [0, 4, 12, 0].map((p, i) => ({
        t: now - (4 - i) * 1000,
        up: true,
        endpointPending: p,
        endpointTotal: 10 + i,
        servicePending: 0,
        serviceTotal: 1,
        syncs: i < 3 ? 1 : 2,
        mode: 'nftables' as const,
      })),
    },
    syncs: [{ node: 'worker', t: now - 1500 }],
    rulesets: [
      {
        node: 'worker',
        why: 'sync',
        t: now - 1000,
        holds: { nftables: true, iptables: false },
        lines: after1,
        diff: diffLines(before1, after1),
        commands: ['nft list table ip kube-proxy'],
      },
    ],
    experiments: EXPERIMENTS,
    runs: [],
  };
  const hub = new EventHub(() => snapshot);
  const errors: string[] = [];
  let server: WebServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    const { assets, indexHtml } = loadAssets();
    server = await startWebServer({
      token: 'c'.repeat(48),
      hub,
      assets,
      indexHtml,
      handlers: {
        run: () => Promise.resolve({}),
        explain: () => Promise.resolve({}),
        trace: () => Promise.resolve({}),
      },
    });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(server.url);
    await page.waitForSelector('#conn[data-state="open"]', { timeout: 20_000 });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('draws the snapshot: tables, charts with the sync marked, the ruleset with its change', async () => {
    await page.waitForSelector('#pods tr[data-pod="svc/web-1"]', { timeout: 10_000 });
    assert.match(await page.innerText('#services tr[data-service="svc/web"]'), /198\.18\.11\.2/);
    await page.waitForSelector('#charts .node-charts[data-node="worker"][data-sync-marks="1"]', {
      timeout: 10_000,
    });
    assert.equal(
      await page.getAttribute('#charts .node-charts[data-node="worker"]', 'data-pending-max'),
      '12',
    );
    assert.equal(await page.getAttribute('#ruleset', 'data-holds'), 'nftables');
    assert.deepEqual(await page.locator('#ruleset-text .add').allInnerTexts(), [
      '+     dnat to 198.18.10.2:8080',
    ]);
    assert.equal(await page.locator('#experiment-buttons button').count(), EXPERIMENTS.length);
    assert.deepEqual(errors, [], 'no script errors');
  });

  test('a change pushed later is drawn', async () => {
    hub.publish({
      event: 'objects',
      data: {
        upsert: [
          {
            kind: 'ConfigMap',
            key: 'ConfigMap/kube-system/kube-proxy',
            mode: 'iptables',
            minSyncPeriod: '15s',
          },
        ],
        remove: ['Pod/svc/web-1'],
      },
    });
    await page.waitForFunction(
      `document.querySelector('#config')?.textContent?.includes('mode iptables, minSyncPeriod 15s')`,
      undefined,
      { timeout: 10_000 },
    );
    await page.waitForFunction(
      `document.querySelector('#pods tr[data-pod="svc/web-1"]') === null`,
      undefined,
      { timeout: 10_000 },
    );
    assert.deepEqual(errors, []);
  });
});
