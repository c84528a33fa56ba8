// What ipvs mode checks before it programs anything: the kernel modules (loaded, built in, or loaded now by
// modprobe), the scheduler's own module, and ipset's version; one message naming everything missing.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkIPVSRequirements,
  missingModules,
  requiredModules,
} from '../../../packages/agent/src/backends/ipvs/requirements.js';
import type { ModuleReadings } from '../../../packages/agent/src/backends/ipvs/requirements.js';
import type { CommandResult, CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { probeScheduler } from '../../../packages/agent/src/backends/ipvs/node-setup.js';
import { connReuseModeNeedsZero } from '../../../packages/agent/src/backends/ipvs/sysctls.js';
import { FakeIpvs } from '../../../packages/agent/src/netfilter/ipvs/fake.js';

/** modprobe loads only `loadable`; `ipset version` prints `ipsetVersion`. */
function tools(loadable: string[], ipsetVersion = 'ipset v7.17, protocol version: 7\n') {
  const asked: string[] = [];
  const runner: CommandRunner = {
    async run(cmd, args): Promise<CommandResult> {
      asked.push([cmd, ...args].join(' '));
      if (cmd === 'modprobe') {
        const name = args.at(-1) ?? '';
        return loadable.includes(name)
          ? { code: 0, stdout: '', stderr: '' }
          : {
              code: 1,
              stdout: '',
              stderr: `modprobe: FATAL: Module ${name} not found in directory /lib/modules/x\n`,
            };
      }
      if (cmd === 'ipset') return { code: 0, stdout: ipsetVersion, stderr: '' };
      return { code: 127, stdout: '', stderr: `${cmd}: not found` };
    },
  };
  return { runner, asked };
}

function readings(loaded: string[], builtin: string[] = []): ModuleReadings {
  return { loaded: (n) => loaded.includes(n), builtin: () => builtin };
}

describe('ipvs mode requirements', () => {
  test('the modules: ip_vs, the scheduler’s, conntrack, dummy; rr when the scheduler is empty', () => {
    assert.deepEqual(requiredModules(''), ['ip_vs', 'ip_vs_rr', 'nf_conntrack', 'dummy']);
    assert.deepEqual(requiredModules('wrr'), ['ip_vs', 'ip_vs_wrr', 'nf_conntrack', 'dummy']);
  });

  test('a module loaded or built in is not probed; one modprobe loads is fine', async () => {
    const t = tools(['dummy']);
    const missing = await missingModules(
      requiredModules('sh'),
      readings(['ip_vs', 'nf_conntrack'], ['ip_vs_sh']),
      t.runner,
    );
    assert.deepEqual(missing, []);
    assert.deepEqual(t.asked, ['modprobe -- dummy']);
  });

  test('every missing part is named in one message, with modprobe’s own words', async () => {
    const message = await checkIPVSRequirements({
      scheduler: 'lc',
      commands: tools(['dummy'], 'ipset v5.4, protocol version: 6\n').runner,
      readings: readings(['nf_conntrack']),
    });
    assert.equal(
      message,
      'ipvs mode cannot run on this node: the kernel lacks the modules ' +
        'ip_vs (modprobe: FATAL: Module ip_vs not found in directory /lib/modules/x), ' +
        'ip_vs_lc (modprobe: FATAL: Module ip_vs_lc not found in directory /lib/modules/x); ' +
        'ipset 5.4 is older than 6.0. Nothing was programmed. Use mode "nftables" or "iptables", ' +
        'or a kernel built with IP_VS (CONFIG_IP_VS) and its schedulers.',
    );
  });

  test('a node with everything passes', async () => {
    const message = await checkIPVSRequirements({
      scheduler: '',
      commands: tools([]).runner,
      readings: readings(['ip_vs', 'ip_vs_rr', 'nf_conntrack', 'dummy']),
    });
    assert.equal(message, undefined);
  });

  test('the scheduler probe: an existing user of it suffices, else a probe server comes and goes', () => {
    const ipvs = new FakeIpvs();
    assert.equal(probeScheduler(ipvs, 'rr'), undefined);
    const listed = ipvs.listVirtualServers();
    assert.ok(listed.ok);
    assert.deepEqual(listed.value, [], 'the probe is removed');
    assert.match(probeScheduler(ipvs, 'nosuch') ?? '', /no scheduler "nosuch"/);
  });

  test('conn_reuse_mode is set to 0 only on kernels before 5.9 (k/k #93297)', () => {
    assert.equal(connReuseModeNeedsZero('4.19.0-25-amd64'), true);
    assert.equal(connReuseModeNeedsZero('5.8.18'), true);
    assert.equal(connReuseModeNeedsZero('5.9.0'), false);
    assert.equal(connReuseModeNeedsZero('6.1.0-57-amd64'), false);
  });
});
