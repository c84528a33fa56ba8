// The soak's iptables-save timing: each node's dump runs in the node's namespace with the node's PATH (its
// iptables back end), one node at a time; the summary is the run's median and slowest dump and the largest
// ruleset printed, with failed dumps counted apart rather than timed.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CommandOptions, CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { IptablesSaveSampler, summarizeIptablesSave } from '../../../packages/lab/src/soak/iptables-save.js';

describe('soak iptables-save timing', () => {
  test('summary: median, slowest and largest of the dumps; none measured says so', () => {
    const s = summarizeIptablesSave(
      [
        { ms: 40, lines: 100 },
        { ms: 10, lines: 120 },
        { ms: 25.04, lines: 90 },
      ],
      2,
    );
    assert.deepEqual(s, { count: 3, failed: 2, p50Ms: 25, maxMs: 40, maxLines: 120 });
    assert.deepEqual(summarizeIptablesSave([], 1), { count: 0, failed: 1 });
  });

  test('each node dumps in its own namespace with its own PATH; a failed dump is not timed', async () => {
    const calls: { args: readonly string[]; env: CommandOptions['env'] }[] = [];
    let clock = 0;
    const runner: CommandRunner = {
      run(cmd, args, options = {}) {
        assert.equal(cmd, 'ip');
        calls.push({ args, env: options.env });
        const ns = args[2];
        clock += ns === 'lab-a' ? 30 : 7;
        return Promise.resolve(
          ns === 'lab-a'
            ? { code: 0, stdout: '*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n', stderr: '' }
            : { code: 4, stdout: '', stderr: 'Another app is currently holding the xtables lock' },
        );
      },
    };
    const sampler = new IptablesSaveSampler(
      runner,
      [
        { name: 'a', namespace: 'lab-a', env: { PATH: '/lab/legacy:/usr/sbin' } },
        { name: 'b', namespace: 'lab-b', env: { PATH: '/lab/nft:/usr/sbin' } },
      ],
      () => clock,
    );
    await sampler.sampleOnce();
    await sampler.sampleOnce();
    assert.deepEqual(
      calls.map((c) => [...c.args, c.env?.PATH]),
      [
        ['netns', 'exec', 'lab-a', 'iptables-save', '/lab/legacy:/usr/sbin'],
        ['netns', 'exec', 'lab-b', 'iptables-save', '/lab/nft:/usr/sbin'],
        ['netns', 'exec', 'lab-a', 'iptables-save', '/lab/legacy:/usr/sbin'],
        ['netns', 'exec', 'lab-b', 'iptables-save', '/lab/nft:/usr/sbin'],
      ],
    );
    assert.deepEqual(sampler.summary(), {
      a: { count: 2, failed: 0, p50Ms: 30, maxMs: 30, maxLines: 3 },
      b: { count: 0, failed: 2 },
    });
  });
});
