// Flag syntax (pflag's rules) and precedence (upstream-model.md §7 "Flags"; §10.9).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseProxyFlags } from '../../packages/agent/src/config/flags.js';
import { formatProblem } from '../../packages/agent/src/config/problems.js';
import { HEADER, expectErrors, expectOk, load, loadFile } from './helpers.js';

describe('flag syntax', () => {
  const verbosityForms: ReadonlyArray<readonly string[]> = [
    ['-v', '4'],
    ['-v=4'],
    ['-v4'],
    ['--v=4'],
    ['--v', '4'],
  ];
  for (const argv of verbosityForms) {
    test(`${argv.join(' ')} sets verbosity 4`, () => {
      assert.equal(expectOk(load(argv)).config.logging.verbosity, 4);
    });
  }

  test('--flag=value and --flag value are the same', () => {
    const a = expectOk(load(['--proxy-mode=nftables'])).config;
    const b = expectOk(load(['--proxy-mode', 'nftables'])).config;
    assert.equal(a.mode, 'nftables');
    assert.deepEqual(a, b);
  });

  test('booleans: --x is true, --x=false is false', () => {
    assert.equal(expectOk(load(['--masquerade-all'])).config.masqueradeAll, true);
    assert.equal(expectOk(load(['--masquerade-all', '--masquerade-all=false'])).config.masqueradeAll, false);
    assert.equal(
      expectOk(load(['--iptables-localhost-nodeports=false'])).config.iptables.localhostNodePorts,
      false,
    );
  });

  test('a boolean does not take the next word: "--cleanup false" leaves an argument', () => {
    const errors = expectErrors(load(['--cleanup', 'false']));
    assert.deepEqual(errors, ['unexpected argument "false": kube-proxy takes no arguments']);
  });

  test('underscores are dashes in flag names', () => {
    assert.equal(expectOk(load(['--proxy_mode=nftables'])).config.mode, 'nftables');
  });

  test('an unknown flag is an error naming it', () => {
    assert.deepEqual(expectErrors(load(['--proxy-mod=nftables'])), ['--proxy-mod: unknown flag']);
    assert.deepEqual(expectErrors(load(['-x'])), ["-x: unknown shorthand flag: 'x' in -x"]);
  });

  test('bad flag values name the flag; all are reported', () => {
    const errors = expectErrors(
      load(['--iptables-sync-period=5x', '--kube-api-burst=ten', '--profiling=maybe']),
    );
    assert.equal(errors.length, 3);
    assert.match(errors[0] ?? '', /^--iptables-sync-period: unknown unit "x"/);
    assert.match(errors[1] ?? '', /^--kube-api-burst: invalid 32-bit integer "ten"/);
    assert.match(errors[2] ?? '', /^--profiling: invalid boolean "maybe"/);
  });

  test('a value flag at the end without a value is an error', () => {
    assert.deepEqual(expectErrors(load(['--proxy-mode'])), ['--proxy-mode: flag needs an argument']);
  });

  test('--feature-gates=A=true,B=false, repeated flags merge', () => {
    const parsed = parseProxyFlags(['--feature-gates=PreferSameTrafficDistribution=false,AllBeta=true']);
    assert.deepEqual(parsed.values.get('feature-gates'), {
      kind: 'gates',
      value: { PreferSameTrafficDistribution: false, AllBeta: true },
    });
    const { config } = expectOk(
      load(['--feature-gates=AllAlpha=false', '--feature-gates', 'PreferSameTrafficDistribution=false']),
    );
    assert.deepEqual(config.featureGates, { AllAlpha: false, PreferSameTrafficDistribution: false });
    assert.equal(config.gates.preferSameTrafficDistribution, false);
  });

  test('--feature-gates with a non-boolean value is refused', () => {
    const errors = expectErrors(load(['--feature-gates=PreferSameTrafficDistribution=yes']));
    assert.match(errors[0] ?? '', /^--feature-gates: invalid value of PreferSameTrafficDistribution=yes/);
  });

  test('--nodeport-addresses is a comma list; repeating appends', () => {
    const { config } = expectOk(
      load(['--nodeport-addresses=198.18.0.0/24,198.18.1.0/24', '--nodeport-addresses=2001:db8::/64']),
    );
    assert.deepEqual(config.nodePortAddresses, ['198.18.0.0/24', '198.18.1.0/24', '2001:db8::/64']);
  });

  test('non-config options', () => {
    const { options } = expectOk(
      load([
        '--cleanup',
        '--init-only',
        '--write-config-to=/tmp/out.yaml',
        '--master=https://198.18.0.1:6443',
        '--kubeconfig=/k.conf',
      ]),
    );
    assert.deepEqual(options, {
      configFile: undefined,
      cleanup: true,
      initOnly: true,
      writeConfigTo: '/tmp/out.yaml',
      master: 'https://198.18.0.1:6443',
      kubeconfig: '/k.conf',
      nftablesLayout: 'upstream',
      nftExecutor: 'auto',
      nftablesStateDir: undefined,
    });
  });

  test('every problem from parsing is a value, never a throw', () => {
    const r = parseProxyFlags(['--nope', 'stray', '--v=-']);
    assert.deepEqual(r.problems.map(formatProblem), [
      '--nope: unknown flag',
      '--v: invalid 32-bit integer "-"',
      'unexpected argument "stray": kube-proxy takes no arguments',
    ]);
  });
});

describe('precedence without --config', () => {
  test('--iptables-min-sync-period applies to nftables mode', () => {
    const { config } = expectOk(load(['--proxy-mode=nftables', '--iptables-min-sync-period=15s']));
    assert.equal(config.minSyncPeriodMs, 15_000);
  });

  test('--iptables-sync-period applies to iptables mode and to mode ""', () => {
    assert.equal(expectOk(load(['--iptables-sync-period=1m'])).config.syncPeriodMs, 60_000);
    assert.equal(
      expectOk(load(['--proxy-mode=iptables', '--iptables-sync-period=1m'])).config.syncPeriodMs,
      60_000,
    );
  });

  test('--ipvs-sync-period sets the sync period in ipvs mode only, as upstream', () => {
    const r = expectOk(load(['--proxy-mode=nftables', '--ipvs-sync-period=5m']));
    assert.equal(r.config.syncPeriodMs, 30_000);
    const ipvs = expectOk(load(['--proxy-mode=ipvs', '--ipvs-sync-period=5m', '--ipvs-scheduler=wrr']));
    assert.equal(ipvs.config.syncPeriodMs, 300_000);
    assert.equal(ipvs.config.ipvs.scheduler, 'wrr');
  });

  test('--iptables-masquerade-bit sets the iptables bit only; nftables keeps 14', () => {
    const ipt = expectOk(load(['--iptables-masquerade-bit=10'])).config;
    const nft = expectOk(load(['--proxy-mode=nftables', '--iptables-masquerade-bit=10'])).config;
    assert.equal(ipt.masqueradeBit, 10);
    assert.equal(nft.masqueradeBit, 14);
    assert.equal(nft.iptables.masqueradeBit, 10);
  });

  test('--masquerade-all applies in both modes', () => {
    assert.equal(expectOk(load(['--proxy-mode=nftables', '--masquerade-all'])).config.masqueradeAll, true);
    assert.equal(expectOk(load(['--proxy-mode=iptables', '--masquerade-all'])).config.masqueradeAll, true);
  });

  test('--cluster-cidr is split on ","', () => {
    const { config } = expectOk(load(['--cluster-cidr=198.18.0.0/16,2001:db8::/48']));
    assert.deepEqual(config.detectLocal.clusterCIDRs, ['198.18.0.0/16', '2001:db8::/48']);
  });

  test('deprecated --healthz-port=0 / --metrics-port=0 disable the servers', () => {
    const r = expectOk(load(['--healthz-port=0', '--metrics-port=0']));
    assert.equal(r.config.healthzBindAddress, '');
    assert.equal(r.config.metricsBindAddress, '');
    assert.ok(r.warnings.some((w) => w.includes('--healthz-port has been deprecated')));
  });

  test('deprecated ports are appended only to an address without one', () => {
    const r = expectOk(
      load([
        '--healthz-bind-address=198.18.0.1',
        '--healthz-port=12345',
        '--metrics-bind-address=127.0.0.1:9999',
        '--metrics-port=8888',
      ]),
    );
    assert.equal(r.config.healthzBindAddress, '198.18.0.1:12345');
    assert.equal(r.config.metricsBindAddress, '127.0.0.1:9999');
  });

  test('a bare --healthz-bind-address gets the default port', () => {
    assert.equal(
      expectOk(load(['--healthz-bind-address=198.18.0.1'])).config.healthzBindAddress,
      '198.18.0.1:10256',
    );
  });

  test('config flags map onto the configuration', () => {
    const { config } = expectOk(
      load([
        '--bind-address=198.18.0.7',
        '--oom-score-adj=-500',
        '--conntrack-max-per-core=0',
        '--conntrack-tcp-timeout-established=2h',
        '--conntrack-tcp-be-liberal',
        '--config-sync-period=5m',
        '--kube-api-qps=50',
        '--kube-api-burst=100',
        '--detect-local-mode=InterfaceNamePrefix',
        '--pod-interface-name-prefix=veth',
        '--logging-format=json',
        '--profiling',
      ]),
    );
    assert.equal(config.bindAddress, '198.18.0.7');
    assert.equal(config.oomScoreAdj, -500);
    assert.equal(config.conntrack.maxPerCore, 0);
    assert.equal(config.conntrack.tcpEstablishedTimeoutMs, 7_200_000);
    assert.equal(config.conntrack.tcpBeLiberal, true);
    assert.equal(config.configSyncPeriodMs, 300_000);
    assert.equal(config.clientConnection.qps, 50);
    assert.equal(config.clientConnection.burst, 100);
    assert.equal(config.detectLocalMode, 'InterfaceNamePrefix');
    assert.equal(config.detectLocal.interfaceNamePrefix, 'veth');
    assert.equal(config.logging.format, 'json');
    assert.equal(config.enableProfiling, true);
  });
});

describe('precedence with --config', () => {
  const file = 'mode: iptables\niptables:\n  minSyncPeriod: 2s\nlogging:\n  verbosity: 1\n';

  test('the file replaces the config: config flags are ignored, with a warning naming them', () => {
    const r = expectOk(
      loadFile(file, [
        '--proxy-mode=nftables',
        '--iptables-min-sync-period=15s',
        '--masquerade-all',
        '--healthz-port=0',
      ]),
    );
    assert.equal(r.config.mode, 'iptables');
    assert.equal(r.config.minSyncPeriodMs, 2_000);
    assert.equal(r.config.masqueradeAll, false);
    assert.equal(r.config.healthzBindAddress, '0.0.0.0:10256');
    const warning = r.warnings.find((w) => w.startsWith('flags ignored because --config is given'));
    assert.ok(warning);
    for (const f of ['--proxy-mode', '--iptables-min-sync-period', '--masquerade-all', '--healthz-port']) {
      assert.ok(warning.includes(f), `${f} named in ${warning}`);
    }
  });

  test('logging flags still apply', () => {
    const r = expectOk(loadFile(file, ['-v', '4', '--logging-format=json', '--vmodule=proxier*=5']));
    assert.equal(r.config.logging.verbosity, 4);
    assert.equal(r.config.logging.format, 'json');
    assert.deepEqual(r.config.logging.vmodule, [{ filePattern: 'proxier*', verbosity: 5 }]);
  });

  test("without logging flags the file's logging is kept", () => {
    assert.equal(expectOk(loadFile(file)).config.logging.verbosity, 1);
  });

  test('--hostname-override applies, trimmed and lower-cased', () => {
    const r = expectOk(
      loadFile('hostnameOverride: from-file\n', ['--hostname-override', '  Node-A.Example  ']),
    );
    assert.equal(r.config.nodeName, 'node-a.example');
    assert.equal(r.config.hostnameOverride, 'node-a.example');
  });

  test("the file's hostnameOverride is trimmed and lower-cased too", () => {
    assert.equal(expectOk(loadFile('hostnameOverride: " Worker-7 "\n')).config.nodeName, 'worker-7');
  });

  test('a whitespace-only --hostname-override is refused', () => {
    assert.deepEqual(expectErrors(loadFile('', ['--hostname-override=   '])), [
      '--hostname-override: must not be empty or only whitespace',
    ]);
  });

  test('non-config options apply; --kubeconfig overrides clientConnection.kubeconfig', () => {
    const r = expectOk(
      loadFile('clientConnection:\n  kubeconfig: /from/file\n', ['--kubeconfig=/from/flag', '--cleanup']),
    );
    assert.equal(r.options.cleanup, true);
    assert.equal(r.options.kubeconfig, '/from/flag');
    assert.equal(r.options.configFile, '/etc/kube-proxy/config.conf');
    assert.equal(r.config.clientConnection.kubeconfig, '/from/flag');
  });

  test('a missing file is an error naming it', () => {
    const errors = expectErrors(load(['--config=/nope.yaml'], {}));
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /^--config: cannot read "\/nope.yaml": ENOENT/);
  });

  test('the OS hostname is the node name when nothing overrides it', () => {
    const r = expectOk(load(['--config=/c'], { '/c': HEADER }, '  MyHost  '));
    assert.equal(r.config.nodeName, 'myhost');
  });
});
