// The harness cleans up after itself: pod servers killed and every namespace gone, after a normal run and after a
// set-up that fails half-way (a backend whose first sync throws).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { listNamespaces, sweepNamespaces } from '../../packages/netns/src/namespace.js';
import type { BackendSyncResult, ProxyBackend } from '../../packages/agent/src/sync/backend.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import type { ModeSupport } from './harness/backends.js';
import { NOTHING_DONE } from './harness/backends.js';
import { makeTestCluster } from './harness/cluster.js';

function supportWith(sync: () => Promise<BackendSyncResult>): ModeSupport {
  return {
    create: ({ node }): ProxyBackend => ({
      mode: 'nftables',
      family: node.family,
      requestFullSync: () => undefined,
      sync,
    }),
    dump: [['nft', 'list', 'ruleset']],
    nodePortAddresses: ['primary'],
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function ourNamespaces(prefix: string): Promise<string[]> {
  return (await listNamespaces(hostCommandRunner)).filter((n) => n.startsWith(prefix + '-'));
}

describe('dataplane harness cleanup', kernelOptions(['ip']), () => {
  test('cleanup() kills every pod server and removes every namespace', async () => {
    const prefix = runPrefix();
    try {
      const cluster = await makeTestCluster({
        mode: 'nftables',
        prefix,
        nodes: 1,
        podsPerNode: 2,
        families: ['IPv4'],
        support: supportWith(async () => NOTHING_DONE),
      });
      const pids = cluster.podServerPids;
      assert.equal(pids.length, 2);
      for (const pid of pids) assert.ok(alive(pid), `pod server ${pid} runs before cleanup`);
      assert.ok((await ourNamespaces(prefix)).length > 0);
      await cluster.cleanup();
      for (const pid of pids) assert.ok(!alive(pid), `pod server ${pid} is gone after cleanup`);
      assert.deepEqual(await ourNamespaces(prefix), []);
    } finally {
      await sweepNamespaces(hostCommandRunner, prefix + '-');
    }
  });

  test('a set-up that fails half-way rejects with the reason and leaves nothing behind', async () => {
    const prefix = runPrefix();
    try {
      await assert.rejects(
        makeTestCluster({
          mode: 'nftables',
          prefix,
          nodes: 2,
          podsPerNode: 1,
          families: ['IPv4'],
          support: supportWith(async () => {
            throw new Error('backend refuses on purpose');
          }),
        }),
        /node-0 IPv4: full sync failed: backend refuses on purpose/,
      );
      assert.deepEqual(await ourNamespaces(prefix), []);
    } finally {
      await sweepNamespaces(hostCommandRunner, prefix + '-');
    }
  });
});
