// `kube-proxy-ts --version`: our version, then the kernel tools the agent drives as each reports itself, so an
// image or a node can be checked for what it carries with one command.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { VERSION, versionText } from '../../packages/agent/src/cli/version.js';

/** A host with nft and iptables-legacy, and no iptables-nft (it cannot start: code 127). */
const host: CommandRunner = {
  run: (cmd) =>
    Promise.resolve(
      cmd === 'nft'
        ? { code: 0, stdout: 'nftables v1.0.6 (Lester Gooch #5)\n', stderr: '' }
        : cmd === 'iptables-legacy'
          ? { code: 0, stdout: 'iptables v1.8.9 (legacy)\n', stderr: '' }
          : { code: 127, stdout: '', stderr: `spawn ${cmd} ENOENT` },
    ),
};

describe('--version', () => {
  test('text: ours first, then each tool, a missing one as not found', async () => {
    assert.equal(
      await versionText(false, host),
      `kube-proxy-ts ${VERSION}\n` +
        'nft: nftables v1.0.6 (Lester Gooch #5)\n' +
        'iptables-legacy: iptables v1.8.9 (legacy)\n' +
        'iptables-nft: not found\n',
    );
    assert.match(VERSION, /^v\d+\.\d+\.\d+/, 'the version is read from the agent package');
  });

  test('raw: one JSON object with gitVersion and the tools', async () => {
    assert.deepEqual(JSON.parse(await versionText(true, host)), {
      gitVersion: VERSION,
      tools: {
        nft: 'nftables v1.0.6 (Lester Gooch #5)',
        'iptables-legacy': 'iptables v1.8.9 (legacy)',
        'iptables-nft': 'not found',
      },
    });
  });
});
