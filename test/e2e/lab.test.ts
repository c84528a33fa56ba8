// The lab, end to end: `lab up`'s own code path (startLab) with two nodes, real kubectl as the client, real
// kube-proxy-ts processes in node namespaces, real packets between pod namespaces. One file, so that the tests
// run one after another against one lab (one lab per machine), in the walkthrough's order:
//   comes up → topology → backend switch → churn → down (and: crash, then `lab down`).
// Expected values come from upstream's rules (docs/lab-walkthrough.md explains each), never from our output.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { startLab, type Lab } from '../../packages/lab/src/cluster/index.js';
import { labDown } from '../../packages/lab/src/cluster/down.js';
import { podNamespaceName, prefixLockFile } from '../../packages/lab/src/cluster/layout.js';
import { fetchProxyMetrics, metricValue } from '../../packages/lab/src/cluster/metrics.js';
import { FULL_SYNC_PERIOD_MS } from '../../packages/agent/src/sync/proxier.js';
import { kernelOptions } from '../helpers/kernel.js';
import {
  delay,
  field,
  healthzStatus,
  httpTally,
  inNetns,
  items,
  kubectlFor,
  mustRun,
  podViews,
  run,
  sorted,
  waitFor,
  type PodView,
} from './helpers.js';
import { labTurn, newLabPlace } from './helpers/lab-turn.js';
import { mustRunLab, startLabUp, type LabUp } from './helpers/lab-up.js';
import { churnExperiment } from './helpers/churn.js';
import { AGENT_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';

const gate = kernelOptions(['ip', 'nft', 'iptables', 'iptables-save', 'curl', 'kubectl']);

/** Root-namespace facts the lab must never change: link names and nftables tables. */
async function rootNetworkFacts(): Promise<{ links: string[]; tables: string }> {
  const links = (await mustRun('ip', ['-o', 'link', 'show']))
    .split('\n')
    .map((l) => /^\d+:\s+([^:@]+)/.exec(l)?.[1] ?? '')
    .filter((n) => n !== '')
    .sort();
  const tables = (await mustRun('nft', ['list', 'tables'])).split('\n').sort().join('\n');
  return { links, tables };
}

async function processesMentioning(text: string): Promise<string[]> {
  const out = await mustRun('ps', ['-eo', 'pid=,args=']);
  return out
    .split('\n')
    .filter((l) => l.includes(text) && !l.includes('ps -eo'))
    .map((l) => l.trim());
}

async function assertNothingLeft(
  prefix: string,
  stateDir: string,
  root: { links: string[]; tables: string },
): Promise<void> {
  const namespaces = (await mustRun('ip', ['netns', 'list']))
    .split('\n')
    .filter((l) => l.startsWith(`${prefix}-`));
  assert.deepEqual(namespaces, [], 'no lab namespace is left');
  assert.deepEqual(await processesMentioning(stateDir), [], 'no process started by the lab is left');
  assert.equal(existsSync(stateDir), false, 'the state directory is gone');
  assert.equal(existsSync(prefixLockFile(prefix)), false, 'the prefix lock is released');
  const etc = existsSync('/etc/netns')
    ? readdirSync('/etc/netns').filter((n) => n.startsWith(`${prefix}-`))
    : [];
  assert.deepEqual(etc, [], 'no /etc/netns directory is left');
  assert.deepEqual(
    await rootNetworkFacts(),
    root,
    'the root namespace has the same links and nftables tables',
  );
}

// One lab suite at a time (labTurn): the runner runs two files at once, and lab-kubectl.test.ts has a lab too.
describe('lab: a cluster on one host', { skip: gate.skip, timeout: 1_200_000 }, () => {
  const { prefix, stateDir } = newLabPlace();
  let lab: Lab | undefined;
  let rootBefore: { links: string[]; tables: string };
  let upSeconds = 0;
  const k = (): ReturnType<typeof kubectlFor> => kubectlFor(lab?.kubeconfigPath ?? '');
  const nsOfNode = (node: string): string => `${prefix}-${node}`;
  const podNs = (pod: string, namespace = 'svc'): string => podNamespaceName(prefix, namespace, pod);
  const webPods = async (): Promise<PodView[]> =>
    podViews(await k().json(['-n', 'svc', 'get', 'pods', '-l', 'app=web']));
  const clientPodOn = async (node: string): Promise<string> => {
    const p = (await webPods()).find((x) => x.node === node && x.ready && !x.terminating);
    assert.ok(p, `a ready web pod on ${node}`);
    return podNs(p.name);
  };
  const metricsOf = async (node: string): Promise<string> =>
    waitFor(`metrics of ${node}`, 30_000, () => fetchProxyMetrics(mustRunner, nsOfNode(node)));
  const mustRunner = {
    run: (cmd: string, args: readonly string[]) => run(cmd, args),
  };

  let releaseTurn: () => void = () => undefined;
  before(
    async () => {
      releaseTurn = await labTurn();
      rootBefore = await rootNetworkFacts();
      const t0 = Date.now();
      lab = await startLab({ nodes: 2, mode: 'nftables', stateDir, prefix });
      upSeconds = (Date.now() - t0) / 1000;
    },
    { timeout: 25 * 60_000 },
  );

  after(async () => {
    try {
      await lab?.stop();
      await removeAll(prefix, stateDir);
    } finally {
      releaseTurn();
    }
  });

  test('comes up, and within 60 s a pod reaches all three web pods through http://web.svc/', async () => {
    assert.ok(lab);
    const pods = await webPods();
    assert.equal(pods.filter((p) => p.ready).length, 3);
    assert.deepEqual(
      sorted(new Set(pods.map((p) => p.node))),
      ['control-plane', 'worker'],
      'spread over both nodes',
    );
    const from = await clientPodOn('worker');
    const tally = await waitFor(
      '30 answers from all three web pods',
      Math.max(1000, 60_000 - upSeconds * 1000),
      async () => {
        const t = await httpTally(from, 'http://web.svc/', 30);
        return t.failures === 0 && t.pods.size === 3 ? t : undefined;
      },
    );
    assert.deepEqual(sorted(tally.pods.keys()), sorted(pods.map((p) => p.name)));
    console.log(
      `# lab up in ${upSeconds.toFixed(1)} s; answers per pod: ${JSON.stringify(Object.fromEntries(tally.pods))}`,
    );
  });

  describe('topology: 6 endpoints, 4 on control-plane and 2 on worker', () => {
    const onCP = ['topo-cp-0', 'topo-cp-1', 'topo-cp-2', 'topo-cp-3'];
    const onWorker = ['topo-w-0', 'topo-w-1'];
    const all = [...onCP, ...onWorker];

    before(async () => {
      const pod = (name: string, node: string): object => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'svc', labels: { app: 'topo' } },
        spec: {
          nodeName: node,
          containers: [
            { name: 'pod-server', image: 'kube-proxy-ts/pod-server', ports: [{ containerPort: 8080 }] },
          ],
        },
      });
      const svc = (name: string, spec: object): object => ({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: 'svc' },
        spec: { selector: { app: 'topo' }, ports: [{ port: 80, targetPort: 8080 }], ...spec },
      });
      const objects = [
        ...onCP.map((n) => pod(n, 'control-plane')),
        ...onWorker.map((n) => pod(n, 'worker')),
        svc('topo-itp', { internalTrafficPolicy: 'Local' }),
        svc('topo-etp', { type: 'NodePort', externalTrafficPolicy: 'Local' }),
        svc('topo-pc', { trafficDistribution: 'PreferClose' }),
      ];
      await k().create(objects);
      await waitFor('six ready topo pods', 60_000, async () => {
        const pods = podViews(await k().json(['-n', 'svc', 'get', 'pods', '-l', 'app=topo']));
        return pods.filter((p) => p.ready).length === 6 ? true : undefined;
      });
    });

    /** Requests until only `expected` pods answer and each of them did (rules take a sync to follow). */
    const expectAnswers = async (
      ns: string,
      url: string,
      expected: readonly string[],
      count: number,
    ): Promise<void> => {
      const want = sorted(expected);
      let last = '';
      await waitFor(`answers from exactly ${want.join(', ')} for ${url} in ${ns}`, 45_000, async () => {
        const t = await httpTally(ns, url, count);
        last = JSON.stringify(Object.fromEntries(t.pods));
        return t.failures === 0 && JSON.stringify(sorted(t.pods.keys())) === JSON.stringify(want)
          ? true
          : undefined;
      }).catch((e: unknown) => {
        throw new Error(`${String(e)}; last answers ${last}`);
      });
      // And once more, fresh: the rules hold, not just converged once.
      const t = await httpTally(ns, url, count);
      assert.equal(t.failures, 0);
      assert.deepEqual(sorted(t.pods.keys()), want);
    };

    test('internalTrafficPolicy: Local — a pod reaches only the endpoints on its own node', async () => {
      await expectAnswers(await clientPodOn('worker'), 'http://topo-itp.svc/', onWorker, 30);
      await expectAnswers(await clientPodOn('control-plane'), 'http://topo-itp.svc/', onCP, 40);
    });

    test('externalTrafficPolicy: Local — each NodePort reaches only its node’s endpoints, client IP preserved', async () => {
      const nodePort = Number(
        await k().run(['-n', 'svc', 'get', 'svc', 'topo-etp', '-o', 'jsonpath={.spec.ports[0].nodePort}']),
      );
      assert.ok(nodePort >= 30000 && nodePort <= 32767, `nodePort ${nodePort}`);
      const client = `${prefix}-client`;
      await expectAnswers(client, `http://198.18.0.10:${nodePort}/`, onCP, 40);
      await expectAnswers(client, `http://198.18.0.11:${nodePort}/`, onWorker, 30);
      const t = await httpTally(client, `http://198.18.0.11:${nodePort}/`, 5);
      assert.deepEqual([...t.clients], ['198.18.1.10'], 'the pods saw the client’s own address (no SNAT)');
    });

    test('trafficDistribution: PreferClose without zones — hints are not set, every endpoint is used', async () => {
      await expectAnswers(await clientPodOn('worker'), 'http://topo-pc.svc/', all, 60);
    });

    test('trafficDistribution: PreferClose with zones — each node uses its own zone’s endpoints', async () => {
      await k().run(['label', 'node', 'control-plane', 'topology.kubernetes.io/zone=zone-a']);
      await k().run(['label', 'node', 'worker', 'topology.kubernetes.io/zone=zone-b']);
      await waitFor('zone hints on every topo-pc endpoint', 30_000, async () => {
        const slices = await k().json([
          '-n',
          'svc',
          'get',
          'endpointslices',
          '-l',
          'kubernetes.io/service-name=topo-pc',
        ]);
        const eps = items(slices).flatMap((s) => {
          const e = field(s, 'endpoints');
          return Array.isArray(e) ? e : [];
        });
        return eps.length === 6 && eps.every((e) => Array.isArray(field(e, 'hints', 'forZones')))
          ? true
          : undefined;
      });
      await expectAnswers(await clientPodOn('worker'), 'http://topo-pc.svc/', onWorker, 30);
      await expectAnswers(await clientPodOn('control-plane'), 'http://topo-pc.svc/', onCP, 40);
    });

    test('explain, against the live API server, predicts what the requests showed; --programmed sees a deleted element', async () => {
      assert.ok(lab);
      const paths = lab.paths;
      const cli = [...SOURCE_FLAGS, AGENT_MAIN, 'explain', 'service'];
      const topoIPs = async (names: readonly string[]): Promise<string[]> => {
        const pods = podViews(await k().json(['-n', 'svc', 'get', 'pods', '-l', 'app=topo']));
        return sorted(names.map((n) => `${pods.find((p) => p.name === n)?.ip ?? '?'}:8080`));
      };
      const explainFromHost = async (service: string): Promise<Map<string, string[]>> => {
        const out = await mustRun(process.execPath, [
          ...cli,
          service,
          '-n',
          'svc',
          '-o',
          'json',
          '--kubeconfig',
          lab?.kubeconfigPath ?? '',
          '--config',
          paths.nodeConfig('worker'),
        ]);
        const parsed = JSON.parse(out) as {
          nodes: { node: string; ports: { internal: { endpoints: string[] } }[] }[];
        };
        return new Map(parsed.nodes.map((n) => [n.node, sorted(n.ports[0]?.internal.endpoints ?? [])]));
      };
      // The same split the requests showed above, per node.
      const pc = await explainFromHost('topo-pc');
      assert.deepEqual(pc.get('worker'), await topoIPs(onWorker));
      assert.deepEqual(pc.get('control-plane'), await topoIPs(onCP));
      const itp = await explainFromHost('topo-itp');
      assert.deepEqual(itp.get('worker'), await topoIPs(onWorker));

      // On the node itself, against its live table.
      const programmed = async (): Promise<{ object: string; state: string }[]> => {
        const out = await inNetns(nsOfNode('worker'), [
          process.execPath,
          ...cli,
          'topo-pc',
          '-n',
          'svc',
          '--node',
          'worker',
          '--programmed',
          '-o',
          'json',
          '--kubeconfig',
          paths.nodeKubeconfig('worker'),
          '--config',
          paths.nodeConfig('worker'),
        ]);
        const parsed = JSON.parse(out) as {
          nodes: { ports: { programmed: { object: string; state: string }[] }[] }[];
        };
        return parsed.nodes[0]?.ports[0]?.programmed ?? [];
      };
      const before = await programmed();
      assert.ok(before.length > 3, JSON.stringify(before));
      assert.deepEqual(
        before.filter((o) => o.state !== 'present'),
        [],
      );
      const clusterIP = (
        await k().run(['-n', 'svc', 'get', 'svc', 'topo-pc', '-o', 'jsonpath={.spec.clusterIP}'])
      ).trim();
      const element = `{ ${clusterIP} . tcp . 80 }`;
      await inNetns(nsOfNode('worker'), [
        'nft',
        'delete',
        'element',
        'ip',
        'kube-proxy',
        'service-ips',
        element,
      ]);
      const broken = (await programmed()).filter((o) => o.state !== 'present');
      assert.equal(broken.length, 1, JSON.stringify(broken));
      assert.match(
        broken[0]?.object ?? '',
        new RegExp(`service-ips \\{ ${clusterIP.replaceAll('.', '\\.')} \\. tcp \\. 80 : goto `),
      );
      assert.equal(broken[0]?.state, 'missing');

      // A partial sync trusts what it wrote; the proxy's next full sync (here: its restart) reads the table back
      // and puts the element back.
      const pid = Number(readFileSync(paths.proxyPidFile('worker'), 'utf8').trim());
      process.kill(pid, 'SIGTERM');
      await waitFor('the element back after the proxy restarted', 60_000, async () => {
        const now = await programmed().catch(() => undefined);
        return now !== undefined && now.every((o) => o.state === 'present') ? true : undefined;
      });
    });

    after(async () => {
      await k()
        .run(['-n', 'svc', 'delete', 'pods,services', '-l', 'app=topo', '--wait=false'])
        .catch(() => '');
      await k()
        .run(['-n', 'svc', 'delete', 'services', 'topo-itp', 'topo-etp', 'topo-pc', '--wait=false'])
        .catch(() => '');
    });
  });

  // Upstream's e2e "should implement service.kubernetes.io/service-proxy-name": the proxies watch Services with
  // `!service.kubernetes.io/service-proxy-name`, so the label must turn into a DELETED event on their watch and
  // its removal into ADDED; the EndpointSlice controller copies the label onto the Service's slices.
  test('service-proxy-name: a labelled Service leaves every node’s rules within one sync, and comes back unlabelled', async () => {
    assert.ok(lab);
    const label = 'service.kubernetes.io/service-proxy-name';
    const clusterIP = (
      await k().run(['-n', 'svc', 'get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}'])
    ).trim();
    const element = new RegExp(`${clusterIP.replace(/\./g, '\\.')} \\. tcp \\. 80 : goto service-`);
    const programmed = async (node: string): Promise<boolean> =>
      element.test(await inNetns(nsOfNode(node), ['nft', 'list', 'map', 'ip', 'kube-proxy', 'service-ips']));
    const syncs = async (node: string): Promise<number> =>
      metricValue(await metricsOf(node), 'kubeproxy_sync_proxy_rules_duration_seconds_count') ?? NaN;
    const nodes = ['control-plane', 'worker'];
    /** Relabels, then waits on each node for the ClusterIP to be (or not be) programmed; returns syncs taken. */
    const relabel = async (arg: string, want: boolean): Promise<number[]> => {
      const before = await Promise.all(nodes.map(syncs));
      await k().run(['-n', 'svc', 'label', 'svc', 'web', arg]);
      return Promise.all(
        nodes.map(async (node, i) => {
          await waitFor(`${node}: web's ClusterIP ${want ? 'back' : 'gone'}`, 30_000, async () =>
            (await programmed(node)) === want ? true : undefined,
          );
          return (await syncs(node)) - (before[i] ?? NaN);
        }),
      );
    };
    for (const node of nodes) assert.equal(await programmed(node), true, `${node} serves web`);

    const outSyncs = await relabel(`${label}=foo-bar`, false);
    // One sync takes the Service's deletion; the slices' relabelling may land in a second one.
    for (const n of outSyncs) assert.ok(n >= 1 && n <= 2, `gone within one sync (syncs taken: ${n})`);
    const sliceLabels = (await k().json([
      '-n',
      'svc',
      'get',
      'endpointslices',
      '-l',
      'kubernetes.io/service-name=web',
    ])) as { items: { metadata: { labels?: Record<string, string> } }[] };
    assert.ok(sliceLabels.items.length > 0, 'web has EndpointSlices');
    for (const s of sliceLabels.items)
      assert.equal(s.metadata.labels?.[label], 'foo-bar', 'the slices carry the Service’s label');

    const backSyncs = await relabel(`${label}-`, true);
    for (const n of backSyncs) assert.ok(n >= 1 && n <= 2, `back within one sync (syncs taken: ${n})`);
    const from = await clientPodOn('worker');
    const tally = await waitFor('web answers again from 3 pods', 30_000, async () => {
      const t = await httpTally(from, 'http://web.svc/', 30);
      return t.failures === 0 && t.pods.size === 3 ? t : undefined;
    });
    assert.equal(tally.pods.size, 3);
  });

  test('backend switch: ConfigMap mode iptables → nftables, then rollout restart, replaces the proxies and the rules', async () => {
    assert.ok(lab);
    const node = lab.nodes.find((n) => n.name === 'worker');
    assert.ok(node);
    const rollout = async (sedExpr: string, wantMode: string): Promise<void> => {
      const starts = lab?.nodes.map((n) => n.proxy.starts) ?? [];
      // As on a real cluster: edit the ConfigMap, then restart the DaemonSet's pods to apply it.
      await k().sh(
        `kubectl -n kube-system get configmap kube-proxy -o yaml | sed '${sedExpr}' | kubectl replace -f - && ` +
          'kubectl -n kube-system rollout restart ds kube-proxy && kubectl -n kube-system rollout status ds kube-proxy --timeout=90s',
      );
      await waitFor(`every proxy restarted in ${wantMode} mode and synced`, 60_000, async () => {
        for (const [i, n] of (lab?.nodes ?? []).entries()) {
          if (n.proxy.starts <= (starts[i] ?? 0) || !n.proxy.running) return undefined;
          const text = await fetchProxyMetrics(mustRunner, n.namespace);
          if (!text || !((metricValue(text, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds') ?? 0) > 0))
            return undefined;
        }
        return true;
      });
    };
    const ns = nsOfNode('worker');
    const clusterIP = (
      await k().run(['-n', 'svc', 'get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}'])
    ).trim();

    await rollout('s/mode: nftables/mode: iptables/', 'iptables');
    const saved = await inNetns(ns, [
      'sh',
      '-c',
      'iptables-nft-save 2>/dev/null; iptables-legacy-save 2>/dev/null',
    ]);
    assert.match(saved, /:KUBE-SERVICES /, 'iptables mode programs KUBE-SERVICES');
    assert.match(
      saved,
      new RegExp(`-d ${clusterIP.replace(/\./g, '\\.')}/32 .*-j KUBE-SVC-`),
      'the ClusterIP jumps to a KUBE-SVC chain',
    );
    const nftIn = await run('ip', ['netns', 'exec', ns, 'nft', 'list', 'table', 'ip', 'kube-proxy']);
    assert.notEqual(nftIn.code, 0, 'iptables mode removed the nftables table');
    const from = await clientPodOn('worker');
    assert.equal(
      (await httpTally(from, 'http://web.svc/', 30)).pods.size,
      3,
      'iptables mode balances over 3 pods',
    );

    await rollout('s/mode: iptables/mode: nftables/', 'nftables');
    // The other mode's rules go right after the new proxy's first sync (src/sync/mode-switch.ts), which is also
    // what makes its pod ready: give that cleanup its moment.
    const iptablesNow = (): Promise<string> =>
      inNetns(ns, ['sh', '-c', 'iptables-nft-save 2>/dev/null; iptables-legacy-save 2>/dev/null']);
    // The kubelet's chains (KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY) stay, as on a real node: kube-proxy's go.
    const proxyChains = (text: string): string =>
      text.replace(/KUBE-(IPTABLES-HINT|KUBELET-CANARY)\b/g, 'kubelet');
    const after = await waitFor('the iptables mode’s rules removed', 30_000, async () => {
      const text = proxyChains(await iptablesNow());
      return /KUBE-/.test(text) ? undefined : text;
    }).catch(async () => proxyChains(await iptablesNow()));
    assert.doesNotMatch(after, /KUBE-/, 'no kube-proxy KUBE-* chain is left in either iptables');
    const table = await inNetns(ns, ['nft', 'list', 'table', 'ip', 'kube-proxy']);
    const elementRe = new RegExp(
      `${clusterIP.replace(/\./g, '\\.')} \\. tcp \\. 80 : goto (service-[A-Z0-9]{8}-svc/web/tcp/http)`,
      'g',
    );
    const elements = [...table.matchAll(elementRe)];
    assert.equal(elements.length, 1, 'the ClusterIP:80/TCP is one element of the service-ips map');
    const chainName = elements[0]?.[1] ?? '';
    const chain =
      new RegExp(`chain ${chainName.replace(/\//g, '\\/')} \\{([^}]*(?:\\{[^}]*\\}[^}]*)*)\\}`).exec(
        table,
      )?.[1] ?? '';
    assert.ok(chain !== '', `chain ${chainName} exists`);
    const dispatch = chain.match(/numgen random mod (\d+)/g) ?? [];
    assert.deepEqual(
      dispatch,
      ['numgen random mod 3'],
      'one numgen random mod 3 dispatch over the 3 web pods',
    );
    assert.equal(
      (await httpTally(from, 'http://web.svc/', 30)).pods.size,
      3,
      'nftables mode balances over 3 pods',
    );
  });

  test('churn: pending endpoint changes pile up between syncs (minSyncPeriod 15s) and clear in one sync', async () => {
    assert.ok(lab);
    await churnExperiment(lab, prefix);
    const node = 'worker';
    const read = async (): Promise<{ syncs: number }> => ({
      syncs: metricValue(await metricsOf(node), 'kubeproxy_sync_proxy_rules_duration_seconds_count') ?? NaN,
    });

    // Idle: upstream's only periodic sync without changes is the hourly full sync (FullSyncPeriod); over a quiet
    // window longer than minSyncPeriod nothing syncs, and the proxy stays healthy.
    assert.equal(FULL_SYNC_PERIOD_MS, 3_600_000);
    const quietStart = await read();
    await delay(20_000); // an absence can only be waited out: the quiet window itself
    const quietEnd = await read();
    assert.equal(
      quietEnd.syncs - quietStart.syncs,
      0,
      'no sync without a change (the idle resync is hourly)',
    );
    const healthz = await healthzStatus(nsOfNode(node));
    assert.equal(healthz, '200', 'an idle proxy is healthy');
  });

  test('stop (what Ctrl-C runs) leaves no namespace, process, /etc/netns entry, state or root change behind', async () => {
    assert.ok(lab);
    await lab.stop();
    await assertNothingLeft(prefix, stateDir, rootBefore);
  });

  test('Ctrl-C (SIGINT) on `lab up` removes everything it made', async () => {
    const { prefix: p, stateDir: dir, root, labUp } = await childLabPlace();
    try {
      labUp.child.kill('SIGINT');
      const code = await labUp.exited;
      assert.equal(code, 0, 'lab up exits 0 after Ctrl-C');
      assert.match(labUp.output(), /nothing left behind/);
      await assertNothingLeft(p, dir, root);
    } finally {
      if (labUp.child.exitCode === null) labUp.child.kill('SIGKILL');
      await removeAll(p, dir);
    }
  });

  test('a crashed lab (SIGKILL) leaves things behind, and `lab down` removes them all', async () => {
    const { prefix: p, stateDir: dir, root, labUp } = await childLabPlace();
    try {
      labUp.child.kill('SIGKILL');
      await labUp.exited;
      assert.ok((await processesMentioning(dir)).length > 0, 'its proxies and pod servers outlive the crash');
      const down = await mustRunLab(dir, 'down');
      assert.match(down, /nothing is left behind/);
      await assertNothingLeft(p, dir, root);
    } finally {
      if (labUp.child.exitCode === null) labUp.child.kill('SIGKILL');
      await removeAll(p, dir);
    }
  });
});

/** A child lab of its own prefix and state directory, with the root namespace's facts from before it started. */
async function childLabPlace() {
  const { prefix, stateDir } = newLabPlace();
  const root = await rootNetworkFacts();
  return { prefix, stateDir, root, labUp: await startChildLab(prefix, stateDir) };
}

/** `kube-proxy-ts lab up --nodes 1` as a child process, as a user runs it; resolves once it says it is up. */
async function startChildLab(prefix: string, stateDir: string): Promise<LabUp> {
  const labUp = await startLabUp({ prefix, stateDir }, ['--nodes', '1'], 120_000);
  const made = (await mustRun('ip', ['netns', 'list'])).split('\n').filter((l) => l.startsWith(`${prefix}-`));
  assert.ok(made.length >= 5, `the lab made namespaces (${made.length})`);
  return labUp;
}

/** Last-resort cleanup after a failed test: the same sweep `lab down` does. */
async function removeAll(prefix: string, stateDir: string): Promise<void> {
  await labDown(stateDir, { prefix }).catch(() => undefined);
}
