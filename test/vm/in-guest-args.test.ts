// The in-guest harness's command line and the commands it sends (no guest needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  GUEST_TEST_TIMEOUT_MS,
  guestTestArgv,
  iptablesAlternativesScript,
  parseInGuestArgs,
} from './in-guest.js';
import { parseGuestRunArgs } from './run-in-guest.js';

test('npm run test:guest -- … parses flags and files', () => {
  assert.deepEqual(
    parseInGuestArgs([
      '--env',
      'KPTS_DATAPLANE_BACKENDS=iptables',
      '--iptables',
      'legacy',
      '--test-name-pattern',
      'ClusterIP',
      'test/dataplane/scenarios.test.ts',
    ]),
    {
      files: ['test/dataplane/scenarios.test.ts'],
      env: { KPTS_DATAPLANE_BACKENDS: 'iptables' },
      iptables: 'legacy',
      testNamePattern: 'ClusterIP',
    },
  );
  assert.throws(() => parseInGuestArgs(['--iptables', 'ipvs', 'x.test.ts']), /expected legacy or nft/);
  assert.throws(() => parseInGuestArgs(['--env', 'NOVALUE']), /NAME=VALUE/);
  assert.throws(() => parseInGuestArgs(['--bogus']), /unknown flag/);
});

test('the guest runs the files as npm test does, with the guest ceilings, one file at a time', () => {
  const argv = guestTestArgv({ files: ['test/dataplane/topology.test.ts'], testNamePattern: '^a$' });
  assert.deepEqual(argv.slice(1), [
    '--import',
    'tsx',
    '--conditions=kpts-source',
    '--test',
    '--test-reporter=spec',
    `--test-timeout=${GUEST_TEST_TIMEOUT_MS}`,
    '--test-concurrency=1',
    '--test-name-pattern=^a$',
    'test/dataplane/topology.test.ts',
  ]);
  assert.equal(argv[0], process.execPath);
});

test('--iptables selects both families of one back end, then says which it is', () => {
  assert.equal(
    iptablesAlternativesScript('nft'),
    'update-alternatives --quiet --set iptables /usr/sbin/iptables-nft && ' +
      'update-alternatives --quiet --set ip6tables /usr/sbin/ip6tables-nft && iptables --version',
  );
});

test('npm run guest:run -- … parses flags, then the command after --, quoted for the guest’s shell', () => {
  assert.deepEqual(
    parseGuestRunArgs([
      '--cpus',
      '2',
      '--memory',
      '6144',
      '--share',
      '/tmp/out dir',
      '--env',
      'A=b c',
      '--',
      'bash',
      'scripts/soak-remedies.sh',
      "it's",
    ]),
    {
      command: `'bash' 'scripts/soak-remedies.sh' 'it'\\''s'`,
      shares: [{ hostPath: '/tmp/out dir' }],
      env: { A: 'b c' },
      cpus: 2,
      memoryMiB: 6144,
    },
  );
  assert.throws(() => parseGuestRunArgs(['--cpus', '0', '--', 'true']), /--cpus 0: expected a whole number/);
  assert.throws(() => parseGuestRunArgs(['--cpus', '2']), /no command given/);
  assert.throws(
    () => parseGuestRunArgs(['true']),
    /unexpected true \(flags first, then -- and the command\)/,
  );
});
