// Closed choices (modes, layouts, executors) are read once into their type, and every command words a wrong name
// the same way; the agent refuses a wrong one with the rest of the configuration's problems, and --help and
// --version still answer.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isOneOf, orList, readChoice, unknownChoice } from '../../packages/agent/src/config/choice.js';
import { earlyRequest, parseProxyFlags } from '../../packages/agent/src/config/index.js';
import { expectErrors, load } from './helpers.js';

describe('closed choices', () => {
  test('a name inside the set comes back as itself, an absent one as the fallback, any other as a message', () => {
    const list = ['upstream', 'flat'] as const;
    assert.deepEqual(readChoice('layout', list, 'flat', 'upstream'), { ok: true, value: 'flat' });
    assert.deepEqual(readChoice('layout', list, undefined, 'upstream'), { ok: true, value: 'upstream' });
    assert.deepEqual(readChoice('layout', list, 'Flat', 'upstream'), {
      ok: false,
      message: 'unknown layout "Flat" (upstream or flat)',
    });
    assert.equal(isOneOf(list, 'tall'), false);
  });

  test('the set is listed as a sentence, and the given name is quoted as JSON', () => {
    assert.equal(orList(['a']), 'a');
    assert.equal(orList(['a', 'b', 'c']), 'a, b or c');
    assert.equal(
      unknownChoice('mode', 'ip"vs', ['iptables', 'nftables']),
      'unknown mode "ip\\"vs" (iptables or nftables)',
    );
  });

  test('the agent refuses a wrong layout and executor together with every other problem', () => {
    const errors = expectErrors(
      load([
        '--nftables-layout',
        'tall',
        '--nft-executor',
        'netlink',
        '--proxy-mode',
        'ipvs',
        '--feature-gates',
        'KubeProxyIPVS=false',
      ]),
    );
    assert.equal(errors.length, 3, errors.join('\n'));
    assert.ok(errors.includes('--nftables-layout: unknown layout "tall" (upstream or flat)'));
    assert.ok(errors.includes('--nft-executor: unknown executor "netlink" (auto, cli or library)'));
    assert.ok(
      errors.some((e) => e.startsWith('mode (--proxy-mode): ipvs mode needs the KubeProxyIPVS feature gate')),
    );
  });

  test('--help and --version are answered whatever else the command line holds', () => {
    assert.equal(earlyRequest(parseProxyFlags(['--nftables-layout', 'tall', '--help'])), 'help');
    assert.equal(earlyRequest(parseProxyFlags(['--version=raw'])), 'version-raw');
    assert.equal(earlyRequest(parseProxyFlags(['--version'])), 'version');
    assert.equal(earlyRequest(parseProxyFlags(['--proxy-mode', 'nftables'])), undefined);
  });
});
