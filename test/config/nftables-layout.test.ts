// --nftables-layout: a kube-proxy-ts flag beside upstream's configuration (the config file's schema is upstream's
// and has no such field), so it applies with --config too, and an unknown name is refused naming the flag.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { flagUsage } from '../../packages/agent/src/config/flags.js';
import { expectErrors, expectOk, load, loadFile } from './helpers.js';

describe('--nftables-layout', () => {
  test('defaults to upstream; flat is taken with and without --config, with no warning', () => {
    assert.equal(expectOk(load(['--proxy-mode', 'nftables'])).options.nftablesLayout, 'upstream');
    const flags = load(['--proxy-mode', 'nftables', '--nftables-layout', 'flat']);
    assert.equal(expectOk(flags).options.nftablesLayout, 'flat');
    const file = loadFile('mode: nftables\n', ['--nftables-layout=flat']);
    assert.equal(expectOk(file).options.nftablesLayout, 'flat');
    assert.deepEqual(file.warnings, [], 'not among the flags --config ignores');
  });

  test('an unknown layout is refused, naming the flag and the choices', () => {
    assert.deepEqual(expectErrors(load(['--nftables-layout', 'tall'])), [
      '--nftables-layout: unknown layout "tall" (upstream or flat)',
    ]);
  });

  test('--help says what each layout does', () => {
    assert.match(
      flagUsage(),
      /--nftables-layout {2}kube-proxy-ts only, nftables mode: 'upstream' \(default\).*'flat'/,
    );
  });
});
