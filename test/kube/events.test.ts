// The agent's Events: the "Starting" event upstream kube-proxy writes at start, as an events.k8s.io/v1 POST seen
// by the fake API server, and a failure to write one that is logged once and reported, never thrown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NodeEventWriter } from '../../packages/agent/src/kube/events.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';
import { FakeApiServer } from './helpers/fake-apiserver.js';
import { clientFor, WatchedLog } from './helpers/setup.js';

const EVENTS_PATH = '/apis/events.k8s.io/v1/namespaces/default/events';

async function writerAgainst(t: { after: (fn: () => Promise<void>) => void }): Promise<{
  server: FakeApiServer;
  writer: NodeEventWriter;
  log: WatchedLog;
}> {
  const server = await FakeApiServer.start();
  t.after(() => server.close());
  const log = new WatchedLog();
  const writer = new NodeEventWriter({
    client: clientFor(server),
    clock: new FakeClock(Date.parse('2025-03-01T10:00:00.123Z')),
    logger: log.logger,
    nodeName: 'worker',
    hostname: 'host-a',
  });
  return { server, writer, log };
}

test('Starting: one events.k8s.io/v1 Event about the Node, as upstream kube-proxy writes it', async (t) => {
  const { server, writer, log } = await writerAgainst(t);
  assert.equal(await writer.starting(), true);
  const posts = server.requests.filter((r) => r.kind === 'create');
  assert.equal(posts.length, 1);
  assert.equal(posts[0]?.path, EVENTS_PATH);
  assert.equal(posts[0]?.headers['content-type'], 'application/json');
  assert.deepEqual(posts[0]?.body, {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: `worker.${(1740823200123n * 1_000_000n).toString(16)}`, namespace: 'default' },
    eventTime: '2025-03-01T10:00:00.123000Z',
    reportingController: 'kube-proxy',
    reportingInstance: 'kube-proxy-host-a',
    action: 'StartKubeProxy',
    reason: 'Starting',
    regarding: { kind: 'Node', name: 'worker', uid: 'worker' },
    note: '',
    type: 'Normal',
  });
  assert.equal(log.records.length, 0);
});

test('a refused event is logged once and never thrown', async (t) => {
  const { server, writer, log } = await writerAgainst(t);
  server.failNext = { count: 2, code: 403 };
  assert.equal(await writer.starting(), false);
  assert.equal(await writer.starting(), false);
  const warnings = log.matching('cannot write event; continuing without events');
  assert.equal(warnings.length, 1);
  assert.match(String(warnings[0]?.fields.error), /HTTP 403/);
  // The API server back: the next event goes through.
  assert.equal(await writer.starting(), true);
  assert.equal(server.requests.filter((r) => r.kind === 'create').length, 3);
});
