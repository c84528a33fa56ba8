// kube-proxy-ts's own flags beside upstream's configuration: --nftables-layout, --nft-executor, --nftables-state-dir. The
// config file's schema is upstream's and has no such fields, so they apply with --config too, and an unknown value
// is refused naming the flag. (Which executor --nft-executor gives: choose-executor.ts, tested in
// test/netfilter/nft/library.test.ts.)
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { flagUsage } from '../../packages/agent/src/config/flags.js';
import type { ProxyOptions } from '../../packages/agent/src/config/proxy-config.js';
import { expectErrors, expectOk, load, loadFile } from './helpers.js';

const FLAGS: readonly {
  readonly flag: string;
  readonly option: 'nftablesLayout' | 'nftExecutor';
  /** The value with --proxy-mode nftables and no such flag. */
  readonly byDefault: string;
  /** A command line without --config, and the value it gives. */
  readonly fromFlags: { readonly argv: readonly string[]; readonly value: string };
  /** A value given beside --config. */
  readonly withConfig: string;
  readonly unknown: string;
  readonly refusal: string;
  readonly help: RegExp;
}[] = [
  {
    flag: '--nftables-layout',
    option: 'nftablesLayout',
    byDefault: 'upstream',
    fromFlags: { argv: ['--proxy-mode', 'nftables', '--nftables-layout', 'flat'], value: 'flat' },
    withConfig: 'flat',
    unknown: 'tall',
    refusal: '--nftables-layout: unknown layout "tall" (upstream or flat)',
    help: /--nftables-layout {2}kube-proxy-ts only, nftables mode: 'upstream' \(default\).*'flat'/,
  },
  {
    flag: '--nft-executor',
    option: 'nftExecutor',
    byDefault: 'auto',
    fromFlags: { argv: ['--nft-executor', 'cli'], value: 'cli' },
    withConfig: 'library',
    unknown: 'netlink',
    refusal: '--nft-executor: unknown executor "netlink" (auto, cli or library)',
    help: /--nft-executor {2}kube-proxy-ts only, nftables mode: how nft is run\. 'auto'/,
  },
];

for (const f of FLAGS) {
  const option = (o: ProxyOptions): string => o[f.option];
  describe(f.flag, () => {
    test(`defaults to ${f.byDefault}; others are taken with and without --config, with no warning`, () => {
      assert.equal(option(expectOk(load(['--proxy-mode', 'nftables'])).options), f.byDefault);
      assert.equal(option(expectOk(load(f.fromFlags.argv)).options), f.fromFlags.value);
      const file = loadFile('mode: nftables\n', [`${f.flag}=${f.withConfig}`]);
      assert.equal(option(expectOk(file).options), f.withConfig);
      assert.deepEqual(file.warnings, [], 'not among the flags --config ignores');
    });

    test('an unknown value is refused, naming the flag and the choices', () => {
      assert.deepEqual(expectErrors(load([f.flag, f.unknown])), [f.refusal]);
    });

    test('--help says what each choice does', () => {
      assert.match(flagUsage(), f.help);
    });
  });
}

describe('--nftables-state-dir', () => {
  test('off unless given; taken with and without --config, with no warning; empty is off', () => {
    assert.equal(expectOk(load(['--proxy-mode', 'nftables'])).options.nftablesStateDir, undefined);
    const given = expectOk(load(['--proxy-mode', 'nftables', '--nftables-state-dir', '/run/kube-proxy-ts']));
    assert.equal(given.options.nftablesStateDir, '/run/kube-proxy-ts');
    const file = loadFile('mode: nftables\n', ['--nftables-state-dir=/run/kpts']);
    assert.equal(expectOk(file).options.nftablesStateDir, '/run/kpts');
    assert.deepEqual(file.warnings, [], 'not among the flags --config ignores');
    assert.equal(expectOk(load(['--nftables-state-dir='])).options.nftablesStateDir, undefined);
  });

  test('--help says what it leaves and that empty is the default', () => {
    assert.match(flagUsage(), /--nftables-state-dir {2}kube-proxy-ts only, nftables mode: a directory where/);
    assert.match(flagUsage(), /Empty \(the default\): nothing is left/);
  });
});
