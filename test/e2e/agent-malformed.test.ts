// Malformed objects from the API server (wrong types, missing fields, huge lists, a line too long to hold), in the
// first list and on the watch stream: each is logged once and skipped, everything else is programmed, and the proxy
// keeps running. The kernel table must equal `kube-proxy-ts render` of the same objects (which skips them too).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_PROBLEMS_LOGGED_PER_OBJECT } from '../../packages/agent/src/sync/proxier.js';
import { kernelOptions } from '../helpers/kernel.js';
import type { FakeObject } from '../kube/helpers/fake-apiserver.js';
import { AgentLab } from './helpers/agent-lab.js';
import type { AgentLogRecord } from './helpers/agent-process.js';
import { PATHS, webService } from './helpers/agent-objects.js';
import { until } from './helpers/agent-wait.js';

const KERNEL = kernelOptions(['ip', 'nft', 'curl']);
const HUGE = 20_000;

/** Records that mention `name` anywhere (message or fields). */
function mentions(records: readonly AgentLogRecord[], name: string): AgentLogRecord[] {
  return records.filter((r) => JSON.stringify(r).includes(name));
}

function event(type: 'ADDED' | 'MODIFIED', object: unknown): string {
  return `${JSON.stringify({ type, object })}\n`;
}

test('malformed objects are logged once and skipped; the others are programmed', KERNEL, async () => {
  await AgentLab.with(async (lab) => {
    const a = webService('good-a', '198.19.3.1', ['198.18.10.31']);
    lab.putService(a);
    // In the first list: a Service without a name (nothing can identify it).
    lab.api.extraListItems.set(PATHS.services, [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { namespace: 'default' },
        spec: { clusterIP: '198.19.3.99' },
      },
    ]);
    const proxy = lab.startProxy(lab.flags());
    await lab.expectRules(proxy, 60_000);

    const rv = lab.api.resourceVersion;
    const meta = (name: string, labels?: Record<string, string>): FakeObject['metadata'] =>
      ({
        name,
        namespace: 'default',
        resourceVersion: rv,
        ...(labels ? { labels } : {}),
      }) as FakeObject['metadata'];
    const bad: [string, FakeObject][] = [
      // Wrong types: a number for the ClusterIP, a string for the port list.
      [
        PATHS.services,
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: meta('bad-types'),
          spec: { clusterIP: 42, ports: 'eighty' },
        },
      ],
      // Huge list of ports, each of the wrong type.
      [
        PATHS.services,
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: meta('bad-huge'),
          spec: {
            type: 'ClusterIP',
            clusterIP: '198.19.3.50',
            clusterIPs: ['198.19.3.50'],
            ports: Array.from({ length: HUGE }, (_, i) => ({
              name: `p${i}`,
              port: `port-${i}`,
              protocol: 'TCP',
            })),
          },
        },
      ],
      // A slice whose endpoints are not objects and whose ports have no numbers, for a Service that exists.
      [
        PATHS.endpointSlices,
        {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: meta('good-a-bad', { 'kubernetes.io/service-name': 'good-a' }),
          addressType: 'IPv4',
          endpoints: Array.from({ length: HUGE }, (_, i) => `198.18.${i % 256}.1`),
          ports: [{ name: 'http', port: 'eighty', protocol: 'TCP' }],
        },
      ],
    ];
    // A raw event reaches only the watches open now: the rules can be in place before the proxy's watches are.
    await until(
      () => lab.api.watching(PATHS.services) && lab.api.watching(PATHS.endpointSlices),
      'the proxy watching Services and EndpointSlices',
      60_000,
    );
    for (const [path, obj] of bad) {
      lab.track(path, obj);
      lab.api.sendRaw(path, event('ADDED', obj));
    }
    // No metadata.name at all, and a line longer than the reflector keeps (16 MiB): never decoded, not rendered.
    // (Not tracked: an object nobody can name is not part of any state.)
    lab.api.sendRaw(
      PATHS.services,
      event('ADDED', { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'default' } }),
    );
    lab.api.sendRaw(
      PATHS.services,
      event('ADDED', {
        kind: 'Service',
        metadata: meta('bad-overlong'),
        padding: 'x'.repeat(17 * 1024 * 1024),
      }),
    );
    // Then good changes after the bad ones, on both streams.
    const b = webService('good-b', '198.19.3.2', ['198.18.10.32', '198.18.10.33']);
    lab.putService(b);
    await lab.expectRules(proxy, 60_000);
    assert.ok(proxy.running, proxy.tail());

    // Once each: the proxy says what it skipped and why, as warnings, and does not repeat itself.
    for (const name of ['bad-types', 'bad-huge', 'good-a-bad']) {
      // The log comes through the proxy's stderr pipe, read on its own time.
      await proxy.waitForLog((r) => mentions([r], name).length > 0, `a warning about ${name}`, 60_000);
      const said = mentions(proxy.records, name);
      assert.ok(said.length >= 1, `nothing logged about ${name}`);
      assert.ok(
        said.every((r) => r.level === 'warning' && /^skipping /.test(r.msg)),
        `${name}: ${JSON.stringify(said[0])}`,
      );
    }
    assert.equal(
      mentions(proxy.records, 'bad-types').length,
      1,
      JSON.stringify(mentions(proxy.records, 'bad-types')),
    );
    // 20,000 bad entries are not 20,000 log lines: the first few, then one line saying the rest are not logged.
    for (const name of ['bad-huge', 'good-a-bad']) {
      const said = mentions(proxy.records, name);
      assert.equal(
        said.length,
        MAX_PROBLEMS_LOGGED_PER_OBJECT + 1,
        `${name}: ${said.length} log records for one object`,
      );
      assert.match(String(said.at(-1)?.reason), /the rest are not logged/);
    }
    // Never decoded, so known only by its stream: one line.
    const overlong = proxy.matching((r) => /watch line longer than/.test(String(r.reason)));
    assert.equal(overlong.length, 1, JSON.stringify(overlong));
    const nameless = proxy.matching(
      (r) => r.msg === 'skipping malformed object' && /metadata\.name/.test(String(r.reason)),
    );
    assert.equal(
      nameless.length,
      2,
      `the two nameless Services (list and watch), once each: ${JSON.stringify(nameless)}`,
    );
  });
});
