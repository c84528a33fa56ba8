// The lab speaks kubectl (issue 14): against a lab brought up by `kube-proxy-ts lab up --mode iptables --zones
// zone-a,zone-b` (a child process, as a user starts it), the seeds' own command sequences run as written, in a
// shell with KUBECONFIG set; node-side commands go through `lab exec NODE --` in place of ssh. Each test asserts
// what a reader of the seeds expects to see.
//   1 the kube-proxy DaemonSet and its pods · 2 seed 000: ConfigMap edit, rollout restart, rollout status, logs
//   3 seed 001: the switch to nftables the same way · 4 kubectl run -it --rm, kubectl exec
//   5 endpoints, top nodes, top pods · 6 seed 002: zones and hints · 7 a bad config: CrashLoopBackOff, fixed
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kernelOptions } from '../helpers/kernel.js';
import { endLabSuite, labTurn, newLabPlace } from './helpers/lab-turn.js';
import { labExec, mustRunLab, runLab, startLabUp, type LabUp } from './helpers/lab-up.js';
import { run, sorted, waitFor, type Run } from './helpers.js';

const gate = kernelOptions(['ip', 'nft', 'iptables', 'iptables-save', 'curl', 'kubectl', 'script']);
const DEPLOY = new URL('../../deploy/', import.meta.url).pathname;

interface PodRow {
  readonly name: string;
  readonly ready: string;
  readonly status: string;
  readonly restarts: string;
  readonly node: string;
}

/** Rows of a kubectl table (whitespace-separated columns; RESTARTS may read "3 (5s ago)"). */
function tableRows(text: string): string[][] {
  return text
    .trim()
    .split('\n')
    .slice(1)
    .filter((l) => l.trim() !== '')
    .map((l) => l.replace(/\((\d+\w*) ago\)/, '($1-ago)').split(/\s+/));
}

describe('lab: kubectl as on a real cluster (issue 14)', { skip: gate.skip, timeout: 1_200_000 }, () => {
  const { prefix, work, stateDir, kubeconfig } = newLabPlace();
  let lab: LabUp | undefined;
  let releaseTurn: () => void = () => undefined;

  /** A shell command exactly as the seeds write it, with the lab's KUBECONFIG and `lab` on the PATH. */
  const shell = (script: string): Promise<Run> =>
    run('sh', ['-c', script], { KUBECONFIG: kubeconfig, KPTS_STATE: stateDir });
  /** shell, failing on a non-zero exit; its stdout. */
  const sh = async (script: string): Promise<string> => {
    const r = await shell(script);
    if (r.code !== 0) throw new Error(`${script}\nexited ${r.code}: ${r.stderr.trim()}\n${r.stdout}`);
    return r.stdout;
  };
  /** `lab exec NODE -- CMD`, what the seeds do with ssh. */
  const execOnNode = (node: string, cmd: readonly string[]): Promise<string> => labExec(stateDir, node, cmd);
  /** A Service in front of the web pods, applied as the seeds write one (a heredoc); its ClusterIP. */
  const webService = async (name: string, ports: string): Promise<string> => {
    await sh(`kubectl apply -f - <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: svc}
spec:
  selector: {app: web}
  ports: [${ports}]
EOF`);
    return (await sh(`kubectl -n svc get svc ${name} -o jsonpath='{.spec.clusterIP}'`)).trim();
  };
  const proxyPods = async (): Promise<PodRow[]> =>
    tableRows(await sh('kubectl -n kube-system get pods -l k8s-app=kube-proxy -o wide')).map((c) => ({
      name: c[0] ?? '',
      ready: c[1] ?? '',
      status: c[2] ?? '',
      restarts: c[3] ?? '',
      node: c[6] ?? '',
    }));
  const configz = async (node: string): Promise<Record<string, Record<string, unknown>>> => {
    const text = await execOnNode(node, ['curl', '-s', '127.0.0.1:10249/configz']);
    return (
      (JSON.parse(text) as Record<string, Record<string, Record<string, unknown>>>)[
        'kubeproxy.config.k8s.io'
      ] ?? {}
    );
  };
  /** seed 000's way to change the configuration, then a rollout as the seeds do it. */
  const editAndRestart = (sedExpr: string, file: string): Promise<string> =>
    sh(
      `kubectl -n kube-system get cm kube-proxy -o jsonpath='{.data.config\\.conf}' > ${file}\n` +
        `sed -i '${sedExpr}' ${file}\n` +
        `kubectl -n kube-system create cm kube-proxy --from-file=config.conf=${file} --dry-run=client -o yaml | kubectl apply -f -\n` +
        'kubectl -n kube-system rollout restart ds kube-proxy && kubectl -n kube-system rollout status ds kube-proxy',
    );

  before(
    async () => {
      releaseTurn = await labTurn();
      const flags = ['--mode', 'iptables', '--zones', 'zone-a,zone-b'];
      lab = await startLabUp({ stateDir, prefix }, flags, 180_000);
    },
    { timeout: 25 * 60_000 },
  );

  after(async () => {
    await endLabSuite(lab, { stateDir, prefix }, releaseTurn);
    rmSync(work, { recursive: true, force: true });
  });

  test('1. kubectl get ds kube-proxy: desired = ready = nodes; one Running kube-proxy pod per node', async () => {
    const ds = tableRows(await sh('kubectl -n kube-system get ds kube-proxy'))[0] ?? [];
    const [name, desired, current, ready, upToDate, available] = ds;
    assert.equal(name, 'kube-proxy');
    assert.deepEqual([desired, current, ready, upToDate, available], ['2', '2', '2', '2', '2']);
    const pods = await proxyPods();
    assert.deepEqual(sorted(pods.map((p) => p.node)), ['control-plane', 'worker']);
    for (const p of pods) {
      assert.match(p.name, /^kube-proxy-[a-z0-9]{5}$/);
      assert.equal(p.status, 'Running');
      assert.equal(p.ready, '1/1');
    }
  });

  test('2. seed 000: edit minSyncPeriod in the ConfigMap, rollout restart, rollout status; new proxies have it; logs mention sync', async () => {
    const before = new Set((await proxyPods()).map((p) => p.name));
    const out = await editAndRestart('s/minSyncPeriod: 1s/minSyncPeriod: 10s/', join(work, 'kp.conf'));
    assert.match(out, /daemonset\.apps\/kube-proxy restarted/);
    assert.match(out, /daemon set "kube-proxy" successfully rolled out/);
    const pods = await proxyPods();
    assert.equal(pods.length, 2);
    assert.ok(
      pods.every((p) => !before.has(p.name)),
      `new pods: ${pods.map((p) => p.name).join(', ')}`,
    );
    for (const node of ['control-plane', 'worker']) {
      const conf = await configz(node);
      assert.equal(conf.IPTables?.MinSyncPeriod, '10s', `${node}: /configz has the new minSyncPeriod`);
    }
    const grep = await sh('kubectl -n kube-system logs -l k8s-app=kube-proxy --tail=5 | grep -i sync');
    assert.ok(grep.trim().split('\n').length >= 2, grep);
    // -f keeps the stream open (timeout ends it, 124) after printing what is there.
    const follow = await shell(`timeout 3 kubectl -n kube-system logs -f ${pods[0]?.name ?? ''}`);
    assert.equal(follow.code, 124, follow.stderr);
    assert.match(follow.stdout, /"starting kube-proxy-ts"/);
  });

  test('3. seed 001: switch to nftables the same way; the logs show the mode and the cleanup of iptables mode', async () => {
    await editAndRestart('s/mode: iptables/mode: nftables/', join(work, 'kp.conf'));
    for (const node of ['control-plane', 'worker'])
      assert.equal((await configz(node)).Mode, 'nftables', `${node} runs nftables mode`);
    const grep = await waitFor('the cleanup line in both proxies’ logs', 30_000, async () => {
      const text = await sh(
        "kubectl -n kube-system logs -l k8s-app=kube-proxy --tail=20 | grep -iE 'nftables|cleanup|mode'",
      );
      return (text.match(/removed iptables mode leftovers/g) ?? []).length === 2 ? text : undefined;
    });
    assert.match(grep, /mode="nftables"/);
    const table = await execOnNode('worker', ['nft', 'list', 'table', 'ip', 'kube-proxy']);
    assert.match(table, /map service-ips/);
  });

  test('4. kubectl run -it --rm agnhost … curl /hostname | sort | uniq -c: the three web pods; pod c gone; kubectl exec', async () => {
    const web = sorted(
      (await sh("kubectl -n svc get pods -l app=web -o jsonpath='{.items[*].metadata.name}'"))
        .trim()
        .split(/\s+/),
    );
    assert.equal(web.length, 3);
    const out = await sh(
      "kubectl -n svc run c --rm -it --restart=Never --image=registry.k8s.io/e2e-test-images/agnhost:2.47 -- sh -c 'for i in $(seq 1 30); do curl -s http://web.svc/hostname; echo; done' | sort | uniq -c",
    );
    const counts = new Map(
      out
        .split('\n')
        // The pod asked for a TTY (-t), so its lines end in \r\n, as with a real kubelet.
        .map((l) => /^\s*(\d+) (web-\S+)$/.exec(l.replace(/\r$/, '')))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => [m[2] ?? '', Number(m[1])]),
    );
    assert.deepEqual(sorted(counts.keys()), web, out);
    assert.equal(
      [...counts.values()].reduce((a, b) => a + b, 0),
      30,
      out,
    );
    const gone = await waitFor('pod c gone', 60_000, async () => {
      const r = await run('kubectl', ['-n', 'svc', 'get', 'pod', 'c'], { KUBECONFIG: kubeconfig });
      return r.code !== 0 ? r : undefined;
    });
    assert.match(gone.stderr, /pods "c" not found/);

    const answer = await sh(`kubectl -n svc exec ${web[0] ?? ''} -- curl -s http://web.svc/`);
    assert.match(answer, /^pod=web-\S+ client=198\.18\.\d+\.\d+:\d+$/m);
    const code = await shell(`kubectl -n svc exec ${web[0] ?? ''} -- sh -c 'exit 3'`);
    assert.equal(code.code, 3, 'kubectl exec returns the command’s exit code');
    // stdin, and a TTY (kubectl needs a terminal of its own for -t: util-linux script gives it one, 30x100).
    const stdin = await shell(
      `printf 'echo hello from stdin\\nexit 2\\n' | kubectl -n svc exec -i ${web[0] ?? ''} -- sh`,
    );
    assert.equal(stdin.code, 2, stdin.stderr);
    assert.equal(stdin.stdout, 'hello from stdin\n');
    const tty = await run(
      'script',
      [
        '-qec',
        `stty rows 30 cols 100; kubectl -n svc exec -it ${web[0] ?? ''} -- sh -c 'tty; stty size; exit 5'`,
        '/dev/null',
      ],
      { KUBECONFIG: kubeconfig },
    );
    assert.equal(tty.code, 5, tty.stdout);
    assert.match(tty.stdout, /\/dev\/pts\/\d+\r?\n/, 'the command runs on a terminal');
    assert.match(tty.stdout, /^\W*30 100\r?$/m, 'sized as the client’s');
    // kubectl run without -i: the command runs and the pod completes with its exit code.
    await sh("kubectl -n svc run once --restart=Never --image=busybox -- sh -c 'echo done; exit 4'");
    const phase = await waitFor('pod once completed', 60_000, async () => {
      const p = (await sh("kubectl -n svc get pod once -o jsonpath='{.status.phase}'")).trim();
      return p === 'Failed' || p === 'Succeeded' ? p : undefined;
    });
    assert.equal(phase, 'Failed');
    assert.equal(
      (
        await sh(
          "kubectl -n svc get pod once -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}'",
        )
      ).trim(),
      '4',
    );
    assert.equal(await sh('kubectl -n svc logs once'), 'done\n');
    await sh('kubectl -n svc delete pod once --wait=false');
  });

  test('5. kubectl get endpoints -A, kubectl top nodes, kubectl top pods -A print real rows', async () => {
    const ep = tableRows(await sh('kubectl get endpoints -A'));
    const web = ep.find((r) => r[0] === 'svc' && r[1] === 'web');
    assert.ok(web, JSON.stringify(ep));
    assert.match(web[2] ?? '', /^198\.18\.1[01]\.\d+:8080,/);
    const nodes = await waitFor('kubectl top nodes', 60_000, async () => {
      const r = await run('kubectl', ['top', 'nodes'], { KUBECONFIG: kubeconfig });
      return r.code === 0 ? tableRows(r.stdout) : undefined;
    });
    assert.deepEqual(sorted(nodes.map((r) => r[0] ?? '')), ['control-plane', 'worker']);
    for (const r of nodes) {
      assert.match(r[1] ?? '', /^\d+m$/, 'CPU in millicores');
      assert.match(r[3] ?? '', /^[1-9]\d*Mi$/, 'memory in use');
    }
    const pods = tableRows(await sh('kubectl top pods -A'));
    const proxies = pods.filter((r) => r[0] === 'kube-system' && /^kube-proxy-/.test(r[1] ?? ''));
    assert.equal(proxies.length, 2, JSON.stringify(pods));
    assert.ok(
      proxies.every((r) => /^[1-9]\d*Mi$/.test(r[3] ?? '')),
      'each proxy process uses memory',
    );
    assert.equal(pods.filter((r) => r[0] === 'svc' && /^web-/.test(r[1] ?? '')).length, 3);
  });

  test('6. seed 002 with --zones: nodes in zone-a and zone-b; PreferClose hints each endpoint to its zone', async () => {
    const cols = await sh(
      "kubectl get nodes -o custom-columns='NAME:.metadata.name,ZONE:.metadata.labels.topology\\.kubernetes\\.io/zone'",
    );
    assert.deepEqual(tableRows(cols), [
      ['control-plane', 'zone-a'],
      ['worker', 'zone-b'],
    ]);
    await sh(
      "kubectl -n svc create service clusterip web-pc --tcp=80:8080 --dry-run=client -o yaml | sed 's/app: web-pc/app: web/' | kubectl apply -f - && " +
        'kubectl -n svc patch svc web-pc -p \'{"spec":{"trafficDistribution":"PreferClose"}}\'',
    );
    const lines = await waitFor('hints on every web-pc endpoint', 30_000, async () => {
      const text = await sh(
        `kubectl -n svc get endpointslices -l kubernetes.io/service-name=web-pc -o jsonpath='{range .items[*].endpoints[*]}{.zone}{" "}{.hints.forZones[*].name}{"\\n"}{end}'`,
      );
      const rows = text
        .trim()
        .split('\n')
        .map((l) => l.trim().split(' '));
      return rows.length === 3 && rows.every((r) => r.length === 2) ? rows : undefined;
    });
    for (const [zone, hint] of lines) assert.equal(hint, zone, 'each endpoint is hinted to its own zone');
    assert.deepEqual(sorted(new Set(lines.map((l) => l[0] ?? ''))), ['zone-a', 'zone-b']);
    await sh('kubectl -n svc delete svc web-pc');
  });

  test('lab watch: every node’s counters and a sparkline of pending changes, once per round', async () => {
    const out = await mustRunLab(stateDir, 'watch', '--rounds', '2');
    const screens = out.split('kube-proxy-ts lab watch').slice(1);
    assert.equal(screens.length, 2, out);
    for (const node of ['control-plane', 'worker'])
      assert.match(
        screens[1] ?? '',
        new RegExp(`^${node}\\s+\\d+\\s+\\d+\\s+\\d+\\s+\\d+\\s+[1-9]\\d*\\s+\\d+ms$`, 'm'),
      );
    assert.match(screens[1] ?? '', /^worker\s+[▁▂▃▄▅▆▇█]{2}\s+\(max \d+\)$/m);
  });

  test('doctor on a node with no flags: stale-udp-conntrack reads the cluster through the agent’s kubeconfig and finds an inserted stale entry', async () => {
    const clusterIP = await webService('udp-dns', '{name: dns, port: 53, protocol: UDP, targetPort: echo}');
    const doctor = async (): Promise<
      { id: string; severity: string; summary: string; evidence: string[] }[]
    > => {
      const r = await runLab(stateDir, 'exec', 'worker', '--', 'kube-proxy-ts', 'doctor', '-o', 'json');
      assert.ok(r.code !== null && r.code <= 2, `doctor exited ${r.code}: ${r.stderr}`);
      return (
        JSON.parse(r.stdout) as {
          findings: { id: string; severity: string; summary: string; evidence: string[] }[];
        }
      ).findings;
    };
    const stale = async (): Promise<{ severity: string; summary: string; evidence: string[] }> => {
      const f = (await doctor()).find((x) => x.id === 'stale-udp-conntrack');
      assert.ok(f, 'doctor has a stale-udp-conntrack finding');
      return f;
    };
    // The proxies have the Service once doctor sees it clean: the check ran (not skipped) with no stale entry.
    const clean = await waitFor('doctor sees udp-dns with its endpoints', 60_000, async () => {
      const f = await stale();
      return f.severity === 'ok' ? f : undefined;
    });
    assert.match(clean.evidence.join('\n'), /IPv4: \d+ UDP entries, 0 stale/);
    // A client's flow to the Service, answered by 198.18.11.99: an address that is no endpoint of it.
    const insertStale = (): Promise<string> =>
      execOnNode('worker', [
        'conntrack',
        '-I',
        '-p',
        'udp',
        '-s',
        '198.18.11.20',
        '-d',
        clusterIP,
        '--sport',
        '40000',
        '--dport',
        '53',
        '-r',
        '198.18.11.99',
        '-q',
        '198.18.11.20',
        '--reply-port-src',
        '8080',
        '--reply-port-dst',
        '40000',
        '-t',
        '120',
      ]);
    const staleEntryThere = async (): Promise<boolean> =>
      (await execOnNode('worker', ['conntrack', '-L', '-p', 'udp', '--orig-dst', clusterIP])).includes(
        'src=198.18.11.99',
      );
    try {
      // The agent removes such an entry itself after any sync that changed a UDP endpoint (its conntrack cleanup),
      // which the cluster's own churn (web's UDP port, kube-dns) can bring at any moment: when doctor says ok and
      // the entry is gone, the agent was first, and it goes in again. Doctor saying ok while it is there fails.
      let f = { severity: 'ok', summary: '', evidence: [] as string[] };
      for (let attempt = 1; f.severity === 'ok'; attempt++) {
        assert.ok(attempt <= 5, 'the agent removed the inserted entry five times before doctor read it');
        await insertStale();
        f = await stale();
        if (f.severity === 'ok')
          assert.equal(await staleEntryThere(), false, 'doctor says ok with the entry there');
      }
      assert.equal(f.severity, 'warn');
      assert.match(f.summary, /^1 UDP conntrack entry is DNATed/);
      assert.match(
        f.evidence.join('\n'),
        new RegExp(
          `udp to ${clusterIP.replace(/\./g, '\\.')}:53 \\(svc/udp-dns:dns\\) answered by 198\\.18\\.11\\.99:8080`,
        ),
      );
    } finally {
      await execOnNode('worker', ['conntrack', '-D', '-p', 'udp', '--orig-dst', clusterIP]).catch(() => '');
      await sh('kubectl -n svc delete svc udp-dns');
    }
  });

  test('lab apiserver-restart: kubectl and the proxies lose the API server for 3 s, then a new Service is served on the nodes', async () => {
    const restart = await runLab(stateDir, 'apiserver-restart');
    assert.equal(restart.code, 0, restart.stderr);
    assert.match(restart.stdout, /API server serving again/);
    assert.match(lab?.output() ?? '', /API server restart: every connection is cut and refused for 3 s/);
    const clusterIP = await webService('after-restart', '{port: 80, targetPort: http}');
    try {
      // The proxies re-watched after the cut: the Service made after it reaches a web pod from each node.
      for (const node of ['control-plane', 'worker'])
        await waitFor(`${node} serves after-restart`, 60_000, async () => {
          const r = await run('ip', [
            'netns',
            'exec',
            `${prefix}-${node}`,
            'curl',
            '-s',
            '--max-time',
            '2',
            `http://${clusterIP}/hostname`,
          ]);
          return r.code === 0 && /^web-/.test(r.stdout) ? true : undefined;
        });
    } finally {
      await sh('kubectl -n svc delete svc after-restart');
    }
  });

  test('7. a bad field in the config: CrashLoopBackOff in get pods -A and the error in logs; fixing the ConfigMap and restarting recovers', async () => {
    const good = join(work, 'good.conf');
    await sh(`kubectl -n kube-system get cm kube-proxy -o jsonpath='{.data.config\\.conf}' > ${good}`);
    await sh(
      `sed 's/mode: nftables/mode: nftabels/' ${good} > ${join(work, 'bad.conf')} && ` +
        `kubectl -n kube-system create cm kube-proxy --from-file=config.conf=${join(work, 'bad.conf')} --dry-run=client -o yaml | kubectl apply -f - && ` +
        'kubectl -n kube-system rollout restart ds kube-proxy',
    );
    const crashing = await waitFor('a kube-proxy pod in CrashLoopBackOff', 90_000, async () => {
      const rows = tableRows(await sh('kubectl get pods -A'));
      return rows.find((r) => r[0] === 'kube-system' && r[3] === 'CrashLoopBackOff');
    });
    const pod = crashing[1] ?? '';
    assert.match(crashing[4] ?? '', /^[1-9]/, 'restarts counted');
    // The latest run's output (a restart may just have begun, its log still empty: ask again).
    const logs = await waitFor('the error in kubectl logs', 30_000, async () => {
      const text = await sh(`kubectl -n kube-system logs ${pod}`);
      return /got "nftabels"/.test(text) ? text : undefined;
    });
    assert.match(logs, /mode: must be "iptables", "ipvs" or "nftables".*got "nftabels"/);
    const previous = await sh(`kubectl -n kube-system logs ${pod} --previous`);
    assert.match(previous, /got "nftabels"/, '--previous: the run before, after a restart');
    // maxUnavailable 1: the other node's proxy was not replaced by a crashing one.
    const running = (await proxyPods()).filter((p) => p.status === 'Running' && p.ready === '1/1');
    assert.equal(running.length, 1, 'the other node keeps its working proxy');

    const fixed = await sh(
      `kubectl -n kube-system create cm kube-proxy --from-file=config.conf=${good} --dry-run=client -o yaml | kubectl apply -f - && ` +
        'kubectl -n kube-system rollout restart ds kube-proxy && kubectl -n kube-system rollout status ds kube-proxy --timeout=120s',
    );
    assert.match(fixed, /successfully rolled out/);
    const pods = await proxyPods();
    assert.deepEqual(
      pods.map((p) => [p.status, p.ready, p.restarts]),
      [
        ['Running', '1/1', '0'],
        ['Running', '1/1', '0'],
      ],
    );
    const ds = tableRows(await sh('kubectl -n kube-system get ds kube-proxy'))[0] ?? [];
    assert.deepEqual(ds.slice(1, 6), ['2', '2', '2', '2', '2']);
  });

  test('8. kubectl apply -f deploy/ over the lab’s kube-proxy objects: the ConfigMap stays; a rollout that breaks stops at one node, whose rules keep serving; re-applying the previous DaemonSet rolls back', async () => {
    const cmBefore = await sh('kubectl -n kube-system get cm kube-proxy -o json');
    const dsBefore = JSON.parse(await sh('kubectl -n kube-system get ds kube-proxy -o json')) as {
      metadata: Record<string, unknown>;
      status?: unknown;
    };
    // deploy/ as shipped lacks the lab's --kubeconfig (a real cluster's pods find the API server in-cluster): its
    // proxies cannot reach the lab's API server, never sync, and so never become ready.
    const applied = await sh(`kubectl apply -f ${DEPLOY}`);
    assert.match(applied, /daemonset\.apps\/kube-proxy configured/);
    assert.doesNotMatch(applied, /configmap/, 'deploy/ has no ConfigMap to apply');
    const stalled = await shell('kubectl -n kube-system rollout status ds kube-proxy --timeout=40s');
    assert.notEqual(stalled.code, 0, `the rollout must not complete: ${stalled.stdout}`);
    // Read as JSON: a restarting pod's RESTARTS column ("2 (3s ago)") shifts the table's columns.
    type PodJson = {
      metadata: { name: string };
      spec: { nodeName?: string };
      status?: { conditions?: { type: string; status: string }[] };
    };
    const podsOf = async (args: string): Promise<PodJson[]> =>
      (JSON.parse(await sh(`kubectl ${args} -o json`)) as { items: PodJson[] }).items;
    const ready = (p: PodJson): boolean =>
      (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    const proxies = await podsOf('-n kube-system get pods -l k8s-app=kube-proxy');
    const notReady = proxies.filter((p) => !ready(p));
    assert.equal(
      notReady.length,
      1,
      `maxUnavailable 1: one node replaced, the other kept (${notReady.length})`,
    );
    assert.equal(proxies.filter(ready).length, 1);
    // The node whose proxy is broken still serves Services from the rules the old proxy left in place.
    const broken = notReady[0]?.spec.nodeName ?? '';
    const webOnBroken = (await podsOf('-n svc get pods -l app=web')).find(
      (p) => p.spec.nodeName === broken && ready(p),
    );
    assert.ok(webOnBroken, `a web pod on ${broken}`);
    const answers = await sh(
      `for i in $(seq 1 10); do kubectl -n svc exec ${webOnBroken.metadata.name} -- curl -s -m 5 http://web.svc/hostname; echo; done`,
    );
    assert.equal(
      answers
        .trim()
        .split('\n')
        .filter((l) => /^web-/.test(l)).length,
      10,
      answers,
    );
    assert.deepEqual(
      JSON.parse(await sh('kubectl -n kube-system get cm kube-proxy -o json')),
      JSON.parse(cmBefore),
      'the ConfigMap is untouched',
    );

    // Rollback: the DaemonSet as it was before, applied back.
    const meta = dsBefore.metadata;
    const previous = {
      ...dsBefore,
      metadata: { name: meta.name, namespace: meta.namespace, labels: meta.labels },
      status: undefined,
    };
    const file = join(work, 'ds-previous.json');
    writeFileSync(file, JSON.stringify(previous));
    assert.ok(readFileSync(file, 'utf8').includes('--kubeconfig='));
    const rolledBack = await sh(
      `kubectl replace -f ${file} && kubectl -n kube-system rollout status ds kube-proxy --timeout=180s`,
    );
    assert.match(rolledBack, /successfully rolled out/);
    assert.deepEqual(
      (await proxyPods()).map((p) => p.ready),
      ['1/1', '1/1'],
    );
    assert.deepEqual(
      JSON.parse(await sh('kubectl -n kube-system get cm kube-proxy -o json')),
      JSON.parse(cmBefore),
      'the ConfigMap is still untouched',
    );
  });

  // Seed 003's third remedy: an HPA whose scale-down waits out a stabilization window, so that a dip in load
  // does not shrink the Deployment (and churn its endpoints) at once. The web pods idle: one would do.
  test('an HPA with a 60 s scale-down stabilization window keeps web from shrinking within the window, then shrinks it', async () => {
    await sh(`kubectl apply -f - <<'EOF'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: svc}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  metrics: [{type: Resource, resource: {name: cpu, target: {type: AverageValue, averageValue: 500m}}}]
  behavior: {scaleDown: {stabilizationWindowSeconds: 60}}
EOF`);
    interface Hpa {
      metadata: { creationTimestamp: string };
      status?: {
        currentReplicas?: number;
        desiredReplicas?: number;
        lastScaleTime?: string;
        conditions?: { type: string; reason: string }[];
      };
    }
    const hpa = async (): Promise<Hpa> => JSON.parse(await sh('kubectl -n svc get hpa web -o json')) as Hpa;
    const replicas = async (): Promise<number> =>
      Number(await sh("kubectl -n svc get deploy web -o jsonpath='{.spec.replicas}'"));
    const held = await waitFor(
      'the HPA wants fewer pods and holds web at 3 (ScaleDownStabilized)',
      60_000,
      async () => {
        const h = await hpa();
        const able = h.status?.conditions?.find((c) => c.type === 'AbleToScale');
        return able?.reason === 'ScaleDownStabilized' ? h : undefined;
      },
    );
    assert.equal(held.status?.currentReplicas, 3);
    assert.equal(await replicas(), 3, 'not shrunk within the window');
    const scaled = await waitFor('web shrinks to 1 once the window has passed', 120_000, async () => {
      const h = await hpa();
      return h.status?.lastScaleTime && (await replicas()) === 1 ? h : undefined;
    });
    const waited =
      Date.parse(scaled.status?.lastScaleTime ?? '') - Date.parse(scaled.metadata.creationTimestamp);
    assert.ok(
      waited >= 60_000,
      `scaled ${waited / 1000} s after the HPA was made: not before its 60 s window`,
    );
    assert.match(
      await sh('kubectl -n svc get events --field-selector reason=SuccessfulRescale'),
      /New size: 1; reason: All metrics below target/,
    );
    assert.match(await sh('kubectl get hpa -A'), /svc\s+web\s+Deployment\/web\s+cpu: \S+\/500m\s+1\s+5\s/);
  });

  test('seed 003’s playbook (docs/troubleshooting.md), line by line: every step answers', async () => {
    const doc = readFileSync(new URL('../../docs/troubleshooting.md', import.meta.url), 'utf8');
    const block = /<!-- playbook: seed-003 -->\n```sh\n([\s\S]*?)\n```/.exec(doc)?.[1];
    assert.ok(block, 'docs/troubleshooting.md has the playbook block');
    const steps = block.split('\n').filter((l) => l.trim() !== '');
    assert.equal(steps.length, 13, 'thirteen steps');
    for (const line of steps) {
      const onNode = line.startsWith('node$ ');
      const cmd = onNode ? line.slice('node$ '.length) : line;
      const r = onNode ? await runLab(stateDir, 'exec', 'worker', '--', 'sh', '-c', cmd) : await shell(cmd);
      // doctor's exit status is its verdict (0 ok, 1 warn, 2 fail); every other step must succeed.
      const answered = /kube-proxy-ts doctor/.test(cmd) ? r.code !== null && r.code <= 2 : r.code === 0;
      assert.ok(answered, `${line}\nexited ${r.code}: ${r.stderr.trim()}`);
      assert.notEqual(r.stdout.trim(), '', `${line}: printed nothing`);
    }
  });
});
