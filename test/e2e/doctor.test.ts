// `kube-proxy-ts doctor` against a real agent process in a node namespace the test makes (the agent e2e fixture:
// a fake API server, the relay, kube-proxy-ts started as an operator would), with each finding provoked for real
// in that namespace: KUBE-* chains left behind, a stale UDP conntrack entry made with `conntrack -I`, an nft
// object of the wrong type that makes every sync fail, and (iptables mode on legacy iptables) a process holding
// a test-owned xtables lock while syncs are due. Doctor runs as a user runs it, inside the namespace, and the
// test reads its JSON: the right id, severity and evidence, and the exit status.
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Finding } from '../../packages/agent/src/inspect/doctor/types.js';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { kernelOptions } from '../helpers/kernel.js';
import { AgentLab } from './helpers/agent-lab.js';
import {
  CLUSTER_CIDR,
  NODE_NAME,
  manifestList,
  serviceObject,
  sliceObject,
  webService,
} from './helpers/agent-objects.js';
import type { AgentProcess } from './helpers/agent-process.js';
import { inNs, replaceWithConflictingTable } from './helpers/agent-table.js';
import { holdXtablesLock } from '../helpers/xtables-lock-holder.js';
import { until } from './helpers/agent-wait.js';
import { AGENT_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';

// syncPeriod 2 s: health turns 503 after 4 s of failing syncs.
const SYNC_FLAGS = ['--iptables-sync-period=2s', '--iptables-min-sync-period=100ms'];
const DNS_IP = '198.19.2.53';
const DNS_ENDPOINT = '198.18.10.53';

interface DoctorRun {
  readonly code: number;
  readonly findings: ReadonlyMap<string, Finding>;
  readonly raw: string;
}

async function doctor(
  ns: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<DoctorRun> {
  const r = await hostCommandRunner.run(
    'ip',
    ['netns', 'exec', ns, process.execPath, ...SOURCE_FLAGS, AGENT_MAIN, 'doctor', '-o', 'json', ...args],
    { env, timeoutMs: 120_000 },
  );
  let parsed: { findings?: Finding[] };
  try {
    parsed = JSON.parse(r.stdout) as { findings?: Finding[] };
  } catch {
    throw new Error(`doctor printed no JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
  }
  const findings = new Map((parsed.findings ?? []).map((f) => [f.id, f]));
  return { code: r.code, findings, raw: r.stdout };
}

function get(run: DoctorRun, id: string): Finding {
  const f = run.findings.get(id);
  assert.ok(f, `no finding ${id} in ${run.raw}`);
  return f;
}

function assertAllOk(run: DoctorRun): void {
  const bad = [...run.findings.values()].filter((f) => f.severity !== 'ok');
  assert.deepEqual(bad, [], 'every finding ok');
  assert.equal(run.code, 0);
}

const KERNEL = kernelOptions(['ip', 'nft', 'curl', 'conntrack', 'iptables-nft', 'iptables-legacy', 'sysctl']);

describe('doctor on a node running kube-proxy-ts (nftables mode)', { ...KERNEL, timeout: 300_000 }, () => {
  let lab: AgentLab;
  let proxy: AgentProcess;
  const web = webService('web', '198.19.2.10', ['198.18.10.10']);
  const dns = {
    service: serviceObject({
      name: 'dns',
      clusterIP: DNS_IP,
      ports: [{ name: 'dns', port: 53, protocol: 'UDP', targetPort: 5353 }],
    }),
    slice: sliceObject({
      service: 'dns',
      addresses: [DNS_ENDPOINT],
      ports: [{ name: 'dns', port: 5353, protocol: 'UDP' }],
    }),
  };
  const stateFile = (): string => lab.file('state.json', manifestList(lab.state()));
  /** Waits until the agent's /healthz answers `status`. */
  const healthzAnswers = (status: number): Promise<void> =>
    until(
      async () => (await lab.get('http://127.0.0.1:10256/healthz')).status === status,
      `/healthz ${status}`,
      30_000,
      () => proxy.tail(10),
    );

  before(async () => {
    lab = await AgentLab.start();
    // A node forwards; the test's namespace starts with forwarding off.
    const fwd = await inNs(lab.node, 'sysctl', ['-w', 'net.ipv4.ip_forward=1']);
    assert.equal(fwd.code, 0, fwd.stderr);
    for (const o of [web, dns]) {
      lab.putService(o);
    }
    proxy = lab.startProxy(lab.flags(...SYNC_FLAGS));
    await lab.expectRules(proxy, 60_000);
  });

  after(async () => {
    await lab?.close();
  });

  test('a clean node: every finding ok, exit 0', async () => {
    const run = await doctor(lab.node, ['-f', stateFile()]);
    assertAllOk(run);
    assert.equal(get(run, 'proxy-health').summary, 'healthy');
    assert.match(get(run, 'stale-udp-conntrack').evidence.join('\n'), /IPv4: \d+ UDP entries, 0 stale/);
  });

  test('with no -f or --kubeconfig, doctor reads the cluster through the kubeconfig the agent’s /configz names', async () => {
    const run = await doctor(lab.node, []);
    assertAllOk(run);
    const evidence = get(run, 'stale-udp-conntrack').evidence.join('\n');
    assert.ok(
      evidence.includes(`the cluster from the agent’s kubeconfig ${lab.kubeconfig} (from its /configz)`),
      evidence,
    );
    assert.match(evidence, /IPv4: \d+ UDP entries, 0 stale/);
  });

  test('KUBE-* chains left behind in nftables mode: leftover-other-mode warns and names them', async () => {
    for (const chain of ['KUBE-SERVICES', 'KUBE-SVC-ZEKCSM6PWAJVEW5G']) {
      const r = await inNs(lab.node, 'iptables-nft', ['-t', 'nat', '-N', chain]);
      assert.equal(r.code, 0, r.stderr);
    }
    try {
      const run = await doctor(lab.node, []);
      const f = get(run, 'leftover-other-mode');
      assert.equal(f.severity, 'warn');
      assert.match(f.summary, /nftables mode, but iptables mode's chains are present \(2\)/);
      assert.match(
        f.evidence.join('\n'),
        /iptables-nft-save: 2 kube-proxy chains \(nat KUBE-SERVICES, nat KUBE-SVC-ZEKCSM6PWAJVEW5G\)/,
      );
      assert.match(f.remedy, /--cleanup/);
      assert.equal(run.code, 1);
      // The same chain in the legacy back end too: two writers with different iptables on one node.
      assert.equal((await inNs(lab.node, 'iptables-legacy', ['-t', 'nat', '-N', 'KUBE-SERVICES'])).code, 0);
      const both = get(await doctor(lab.node, []), 'leftover-other-mode');
      assert.match(both.summary, /iptables-legacy and iptables-nft both hold kube-proxy chains/);
      assert.match(
        both.evidence.join('\n'),
        /iptables-legacy-save: 1 kube-proxy chains \(nat KUBE-SERVICES\)/,
      );
    } finally {
      await inNs(lab.node, 'iptables-legacy', ['-t', 'nat', '-X', 'KUBE-SERVICES']);
      for (const chain of ['KUBE-SVC-ZEKCSM6PWAJVEW5G', 'KUBE-SERVICES'])
        await inNs(lab.node, 'iptables-nft', ['-t', 'nat', '-X', chain]);
    }
  });

  test('a UDP conntrack entry DNATed to an address that is no longer an endpoint: stale-udp-conntrack', async () => {
    // A DNS client's flow to the Service, answered by 198.18.10.99: an endpoint that has since gone.
    const insert = await inNs(lab.node, 'conntrack', [
      '-I',
      '-p',
      'udp',
      '-s',
      '198.18.10.20',
      '-d',
      DNS_IP,
      '--sport',
      '40000',
      '--dport',
      '53',
      '-r',
      '198.18.10.99',
      '-q',
      '198.18.10.20',
      '--reply-port-src',
      '5353',
      '--reply-port-dst',
      '40000',
      '-t',
      '120',
    ]);
    assert.equal(insert.code, 0, insert.stderr);
    try {
      const run = await doctor(lab.node, ['-f', stateFile()]);
      const f = get(run, 'stale-udp-conntrack');
      assert.equal(f.severity, 'warn');
      assert.match(f.summary, /^1 UDP conntrack entry is DNATed/);
      assert.match(
        f.evidence.join('\n'),
        new RegExp(
          `udp to ${DNS_IP}:53 \\(default/dns:dns\\) answered by 198\\.18\\.10\\.99:5353, which is not an endpoint \\(now: ${DNS_ENDPOINT}:5353\\)`,
        ),
      );
      assert.match(
        f.remedy,
        new RegExp(
          `conntrack -D -p udp -f ipv4 --orig-dst ${DNS_IP} --orig-port-dst 53 --reply-src 198\\.18\\.10\\.99 --reply-port-src 5353`,
        ),
      );
      assert.equal(run.code, 1);
      // The remedy works: run it, and the entry is gone.
      const cmd = /conntrack (-D [^;]+)/.exec(f.remedy)?.[1]?.split(' ') ?? [];
      assert.equal((await inNs(lab.node, 'conntrack', cmd)).code, 0);
      assertAllOk(await doctor(lab.node, ['-f', stateFile()]));
    } finally {
      await inNs(lab.node, 'conntrack', ['-D', '-p', 'udp', '--orig-dst', DNS_IP]);
    }
  });

  test('an nft object that conflicts with kube-proxy’s table: sync-failing and proxy-health fail', async () => {
    // service-ips with the wrong type: every transaction that writes it is refused.
    await replaceWithConflictingTable(lab.node);
    try {
      const more = webService('web2', '198.19.2.11', ['198.18.10.11']);
      lab.putService(more);
      await healthzAnswers(503);
      const run = await doctor(lab.node, []);
      const failing = get(run, 'sync-failing');
      assert.equal(failing.severity, 'fail', JSON.stringify(failing));
      assert.match(
        failing.evidence.join('\n'),
        /kubeproxy_sync_proxy_rules_nftables_sync_failures_total = [1-9]/,
      );
      assert.match(failing.remedy, /nft list table ip kube-proxy/);
      const health = get(run, 'proxy-health');
      assert.equal(health.severity, 'fail');
      assert.match(health.evidence.join('\n'), /GET http:\/\/127\.0\.0\.1:10256\/healthz: 503/);
      assert.equal(run.code, 2);
    } finally {
      await inNs(lab.node, 'nft', ['delete', 'table', 'ip', 'kube-proxy']);
      await healthzAnswers(200);
    }
    // Recovered: sync-failing now only warns (failures counted since start, syncs succeed again).
    const after = await doctor(lab.node, []);
    assert.equal(get(after, 'sync-failing').severity, 'warn');
    assert.equal(get(after, 'proxy-health').severity, 'ok');
  });
});

const LEGACY = kernelOptions([
  'ip',
  'curl',
  'flock',
  'iptables-legacy',
  'iptables-legacy-restore',
  'iptables-legacy-save',
  'sysctl',
]);

describe(
  'doctor on an iptables-mode node whose xtables lock another process holds',
  { ...LEGACY, timeout: 300_000 },
  () => {
    let lab: AgentLab;
    let proxy: AgentProcess;
    let lockFile: string;
    let env: Record<string, string>;

    before(async () => {
      lab = await AgentLab.start();
      assert.equal((await inNs(lab.node, 'sysctl', ['-w', 'net.ipv4.ip_forward=1'])).code, 0);
      await inNs(lab.node, 'sysctl', ['-w', 'net.ipv4.conf.all.route_localnet=1']);
      // The plain iptables names point at the legacy back end for this agent only (the one that takes the lock),
      // and the lock is the test's own file, not the host's /run/xtables.lock.
      const bin = join(lab.dir, 'legacy-bin');
      mkdirSync(bin, { recursive: true });
      for (const fam of ['iptables', 'ip6tables']) {
        for (const suffix of ['', '-save', '-restore'])
          symlinkSync(`/usr/sbin/${fam}-legacy${suffix}`, join(bin, `${fam}${suffix}`));
      }
      lockFile = lab.file('xtables.lock', '');
      env = { PATH: `${bin}:${process.env.PATH ?? ''}`, XTABLES_LOCKFILE: lockFile };
      const web = webService('web', '198.19.3.10', ['198.18.10.10']);
      lab.putService(web);
      proxy = lab.startProxy(
        [
          '--kubeconfig',
          lab.kubeconfig,
          '--hostname-override',
          NODE_NAME,
          '--proxy-mode',
          'iptables',
          '--cluster-cidr',
          CLUSTER_CIDR,
          '--conntrack-max-per-core=0',
          '--conntrack-tcp-timeout-established=0',
          '--conntrack-tcp-timeout-close-wait=0',
          ...SYNC_FLAGS,
        ],
        env,
      );
      await until(
        async () =>
          (await inNs(lab.node, 'iptables-legacy-save', ['-t', 'nat'])).stdout.includes('default/web:http'),
        'web in legacy iptables',
        60_000,
        () => proxy.tail(10),
      );
    });

    after(async () => {
      await lab?.close();
    });

    test('a clean iptables node (legacy back end, lock free): every finding ok', async () => {
      assertAllOk(await doctor(lab.node, [], env));
    });

    test('a lock holder while syncs are due: xtables-lock-contention fails and names the process', async () => {
      const holder = await holdXtablesLock(lockFile);
      try {
        // Changes start a sync that blocks on the lock, and whatever comes after waits behind it: syncs are due.
        // (Either is what the finding names, so nothing here needs to wait between the two.)
        for (const [i, name] of ['blocked1', 'blocked2'].entries()) {
          const w = webService(name, `198.19.3.${20 + i}`, [`198.18.10.${20 + i}`]);
          lab.putService(w);
        }
        let run: DoctorRun | undefined;
        await until(
          async () => {
            run = await doctor(lab.node, [], env);
            // The finding this test provokes: the holder named while a sync is held up. (The waits recorded
            // by earlier tests can fail the check first, on their own, on a slow machine.)
            return /holds the xtables lock while/.test(get(run, 'xtables-lock-contention').summary);
          },
          'xtables-lock-contention to name the holder',
          60_000,
          () => JSON.stringify(run?.findings.get('xtables-lock-contention')),
        );
        const f = get(run!, 'xtables-lock-contention');
        assert.equal(f.severity, 'fail');
        assert.match(
          f.summary,
          new RegExp(
            `PID ${holder.process.pid} \\(sleep 120\\) holds the xtables lock while (\\d+ changes wait for a sync|a sync waits for it \\(PID \\d+: flock )`,
          ),
        );
        assert.match(
          f.evidence.join('\n'),
          new RegExp(
            `${lockFile.replace(/[.]/g, '\\.')} held now by PID ${holder.process.pid} \\(FLOCK WRITE\\)`,
          ),
        );
        assert.match(f.remedy, new RegExp(`/proc/${holder.process.pid}/cmdline`));
        assert.equal(run!.code, 2);
      } finally {
        await holder.release();
      }
      // The lock is free again; what is left is the record of the waits in the histogram.
      await until(
        async () =>
          (await inNs(lab.node, 'iptables-legacy-save', ['-t', 'nat'])).stdout.includes(
            'default/blocked2:http',
          ),
        'the blocked changes programmed',
        60_000,
        () => proxy.tail(10),
      );
      const afterwards = await doctor(lab.node, [], env);
      const f = get(afterwards, 'xtables-lock-contention');
      assert.match(f.evidence.join('\n'), /not held now/);
      assert.match(f.evidence.join('\n'), /\d+ waits for the lock: .*p99 \d/);
      assert.notEqual(f.severity, 'ok', `the recorded waits are reported: ${JSON.stringify(f)}`);
    });
  },
);
