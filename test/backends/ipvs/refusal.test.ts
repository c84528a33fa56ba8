// ipvs mode on a kernel without IP_VS (this project's CI machines: CONFIG_IP_VS is not set): the agent, started as
// a node starts it, inside a network namespace of the test's, must exit at once naming the missing modules, and
// leave nothing behind: no kube-ipvs0, no ipset, no iptables chain, no nftables table.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { AGENT_MAIN, SOURCE_FLAGS } from '../../helpers/cli.js';
import { kernelNamespaces } from '../../helpers/kernel.js';

const suite = kernelNamespaces(['node'], ['ip', 'nft', 'iptables-save', 'ipset', 'modprobe']);
const [NODE] = suite.names;

/** Whether this kernel has IPVS at all: then the refusal cannot be shown here, and the test says so. */
function kernelHasIPVS(): boolean {
  if (existsSync('/sys/module/ip_vs')) return true;
  return spawnSync('modprobe', ['-n', '--', 'ip_vs']).status === 0;
}

function inNode(cmd: string, args: readonly string[]): string {
  return execFileSync('ip', ['netns', 'exec', NODE, cmd, ...args], { encoding: 'utf8' });
}

describe('ipvs mode on a kernel without IP_VS', suite.options, () => {
  suite.hooks();

  test('exits at start naming the missing modules, with nothing programmed', (t) => {
    if (kernelHasIPVS()) {
      t.skip(
        'this kernel has IP_VS: the refusal is shown on kernels without it (test/vm covers IPVS itself)',
      );
      return;
    }
    const r = spawnSync(
      'ip',
      [
        ...['netns', 'exec', NODE, process.execPath, ...SOURCE_FLAGS, AGENT_MAIN],
        ...['--proxy-mode', 'ipvs', '--hostname-override', 'node-a'],
        // An API server that is not there: the agent must stop before it ever asks one.
        ...['--master', 'http://127.0.0.1:9', '--healthz-bind-address', '', '--metrics-bind-address', ''],
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    const said = `${r.stdout}${r.stderr}`;
    assert.equal(r.status, 1, `exit status: ${said}`);
    assert.match(said, /ipvs mode cannot run on this node: the kernel lacks the modules ip_vs \(/);
    assert.match(said, /ip_vs_rr \(/, 'the default scheduler rr is named too');
    assert.match(said, /Nothing was programmed/);
    assert.match(said, /deprecated/, 'the deprecation warning comes first');
    assert.doesNotMatch(said, /waiting for the Node object/, 'it stopped before talking to an API server');

    assert.doesNotMatch(inNode('ip', ['-o', 'link', 'show']), /kube-ipvs0/);
    assert.equal(inNode('ipset', ['list', '-n']).trim(), '');
    assert.doesNotMatch(inNode('iptables-save', []), /KUBE-/);
    assert.equal(inNode('nft', ['list', 'ruleset']).trim(), '');
  });
});
