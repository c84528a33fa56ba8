// --nft-executor: a kube-proxy-ts flag beside upstream's configuration, like --nftables-layout: it applies with
// --config too, and an unknown value is refused naming the flag. (Which executor it gives: choose-executor.ts,
// tested in test/netfilter/nft/library.test.ts.)
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { flagUsage } from '../../packages/agent/src/config/flags.js';
import { expectErrors, expectOk, load, loadFile } from './helpers.js';

describe('--nft-executor', () => {
  test('defaults to auto; cli and library are taken with and without --config, with no warning', () => {
    assert.equal(expectOk(load(['--proxy-mode', 'nftables'])).options.nftExecutor, 'auto');
    assert.equal(expectOk(load(['--nft-executor', 'cli'])).options.nftExecutor, 'cli');
    const file = loadFile('mode: nftables\n', ['--nft-executor=library']);
    assert.equal(expectOk(file).options.nftExecutor, 'library');
    assert.deepEqual(file.warnings, [], 'not among the flags --config ignores');
  });

  test('an unknown executor is refused, naming the flag and the choices', () => {
    assert.deepEqual(expectErrors(load(['--nft-executor', 'netlink'])), [
      '--nft-executor: unknown executor "netlink" (auto, cli or library)',
    ]);
  });

  test('--help says what each choice does', () => {
    assert.match(flagUsage(), /--nft-executor {2}kube-proxy-ts only, nftables mode: how nft is run\. 'auto'/);
  });
});
