// A dual-stack lab (`kube-proxy-ts lab up --ip-family dual`, a child process, as a user starts it): nodes and pods
// get an address of each family, a RequireDualStack Service gets a ClusterIP of each and an EndpointSlice of
// each, and a request from a pod answers on both ClusterIPs (IPv6 literal with curl -g) because every proxy
// programmed both `ip kube-proxy` and `ip6 kube-proxy` (nftables mode). NodePort answers over IPv6 from the
// outside client too. Expected values come from the address plan (packages/netns/src/topology.ts) and upstream's
// rules, never from the lab's own output.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cidrContains } from '../../packages/agent/src/model/ip.js';
import { kernelOptions } from '../helpers/kernel.js';
import { deploymentYaml } from '../helpers/manifests.js';
import { endLabSuite, labTurn, newLabPlace } from './helpers/lab-turn.js';
import { labExec, mustRunLab, startLabUp, type LabUp } from './helpers/lab-up.js';
import { field, items, kubectlFor, run, waitFor } from './helpers.js';

const gate = kernelOptions(['ip', 'nft', 'curl', 'kubectl']);
const NODES = ['control-plane', 'worker'];
const V4_SERVICES = '198.19.0.0/16';
const V6_SERVICES = '2001:db8:ff::/112';

const POD_SPEC = `
containers:
- name: pod-server
  image: kube-proxy-ts/pod-server
  ports: [{name: http, containerPort: 8080}]
`;

const MANIFEST = `${deploymentYaml({ app: 'both', namespace: 'default', replicas: 2, podSpec: POD_SPEC })}---
apiVersion: v1
kind: Service
metadata: {name: both, namespace: default}
spec:
  ipFamilyPolicy: RequireDualStack
  selector: {app: both}
  ports: [{name: http, port: 80, targetPort: http}]
`;

describe('lab: --ip-family dual', { skip: gate.skip, timeout: 900_000 }, () => {
  const { prefix, work, stateDir, kubeconfig } = newLabPlace();
  let lab: LabUp | undefined;
  let releaseTurn: () => void = () => undefined;

  const k = kubectlFor(kubeconfig);
  const kubectl = (...args: string[]): Promise<string> => k.run(args);
  const kubectlJson = (...args: string[]): Promise<unknown> => k.json(args);
  const strings = (v: unknown): string[] =>
    Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

  before(
    async () => {
      releaseTurn = await labTurn();
      lab = await startLabUp({ stateDir, prefix }, ['--ip-family', 'dual', '--nodes', '2'], 300_000);
    },
    { timeout: 25 * 60_000 },
  );

  after(async () => {
    await endLabSuite(lab, { stateDir, prefix }, releaseTurn);
    rmSync(work, { recursive: true, force: true });
  });

  test('the lab says and records dual-stack; Nodes have an InternalIP and a pod CIDR of each family', async () => {
    assert.match(lab?.output() ?? '', /The lab is up: 2 nodes, dual-stack \(IPv4 primary\)/);
    const state = JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(state.ipFamily, 'dual');
    assert.match(await mustRunLab(stateDir, 'status'), /IP families: dual-stack \(IPv4 primary, IPv6\)/);
    const nodes = items(await kubectlJson('get', 'nodes'));
    assert.equal(nodes.length, 2);
    for (const [i, node] of nodes.entries()) {
      const internal = (field(node, 'status', 'addresses') as { type: string; address: string }[])
        .filter((a) => a.type === 'InternalIP')
        .map((a) => a.address);
      assert.deepEqual(internal, [`198.18.0.${10 + i}`, `2001:db8::1${i}`]);
      assert.deepEqual(strings(field(node, 'spec', 'podCIDRs')), [
        `198.18.${10 + i}.0/24`,
        `2001:db8:1${i}::/64`,
      ]);
    }
    const cidrs = strings(field(await kubectlJson('get', 'servicecidr', 'kubernetes'), 'spec', 'cidrs'));
    assert.deepEqual(cidrs, [V4_SERVICES, V6_SERVICES]);
  });

  test('a RequireDualStack Service: a ClusterIP and an EndpointSlice per family; a pod reaches both ClusterIPs', async () => {
    writeFileSync(join(work, 'both.yaml'), MANIFEST);
    await kubectl('apply', '-f', join(work, 'both.yaml'));
    const svc = await kubectlJson('-n', 'default', 'get', 'svc', 'both');
    assert.deepEqual(strings(field(svc, 'spec', 'ipFamilies')), ['IPv4', 'IPv6']);
    const [v4, v6] = strings(field(svc, 'spec', 'clusterIPs'));
    assert.ok(v4 !== undefined && cidrContains(V4_SERVICES, v4), `IPv4 ClusterIP ${v4}`);
    assert.ok(v6 !== undefined && cidrContains(V6_SERVICES, v6), `IPv6 ClusterIP ${v6}`);

    // Each of the two pods has an address of each family, in its node's pod CIDRs; each family has its slice.
    const podIPs = await waitFor('two running pods with an address of each family', 120_000, async () => {
      const pods = items(await kubectlJson('-n', 'default', 'get', 'pods', '-l', 'app=both'));
      const running = pods.filter((p) => field(p, 'status', 'phase') === 'Running');
      const ips = running.map((p) =>
        ((field(p, 'status', 'podIPs') as { ip: string }[] | undefined) ?? []).map((x) => x.ip),
      );
      return ips.length === 2 && ips.every((x) => x.length === 2) ? ips : undefined;
    });
    for (const [ip4, ip6] of podIPs) {
      assert.ok(cidrContains('198.18.8.0/21', ip4 ?? ''), `pod IPv4 ${ip4}`);
      assert.ok(cidrContains('2001:db8:10::/44', ip6 ?? ''), `pod IPv6 ${ip6}`);
    }
    const slices = await waitFor(
      'an EndpointSlice per family, each with both pods ready',
      60_000,
      async () => {
        const list = items(
          await kubectlJson(
            '-n',
            'default',
            'get',
            'endpointslices',
            '-l',
            'kubernetes.io/service-name=both',
          ),
        );
        const byFamily = new Map<string, string[]>();
        for (const s of list) {
          const ready = ((field(s, 'endpoints') as unknown[] | undefined) ?? [])
            .filter((e) => field(e, 'conditions', 'ready') === true)
            .flatMap((e) => strings(field(e, 'addresses')));
          byFamily.set(String(field(s, 'addressType')), ready.sort());
        }
        return byFamily.get('IPv4')?.length === 2 && byFamily.get('IPv6')?.length === 2
          ? byFamily
          : undefined;
      },
    );
    assert.deepEqual(slices.get('IPv4'), podIPs.map((p) => p[0]).sort());
    assert.deepEqual(slices.get('IPv6'), podIPs.map((p) => p[1]).sort());

    // From one of the lab's own web pods (namespace svc): both ClusterIPs answer with a `both` pod's name.
    const from = (
      await kubectl('-n', 'svc', 'get', 'pods', '-o', 'jsonpath={.items[0].metadata.name}')
    ).trim();
    assert.notEqual(from, '');
    for (const url of [`http://[${v6}]:80/`, `http://${v4}:80/`]) {
      const answer = await waitFor(`${url} from pod ${from}`, 60_000, async () => {
        const r = await run(
          'kubectl',
          ['-n', 'svc', 'exec', from, '--', 'curl', '-sg', '--max-time', '3', url],
          {
            KUBECONFIG: kubeconfig,
          },
        );
        return r.code === 0 && /pod=both-/.test(r.stdout) ? r.stdout : undefined;
      });
      assert.match(answer, /^pod=both-\S+ client=\S+/m, url);
    }

    // Every proxy programmed the Service in both tables: its IPv4 ClusterIP in `ip`, its IPv6 one in `ip6`.
    for (const node of NODES) {
      const table4 = await labExec(stateDir, node, ['nft', 'list', 'table', 'ip', 'kube-proxy']);
      const table6 = await labExec(stateDir, node, ['nft', 'list', 'table', 'ip6', 'kube-proxy']);
      assert.match(
        table4,
        new RegExp(`${v4.replace(/\./g, '\\.')} \\. tcp \\. 80 `),
        `${node}: ip kube-proxy`,
      );
      assert.match(table6, new RegExp(`${v6} \\. tcp \\. 80 `), `${node}: ip6 kube-proxy`);
      assert.doesNotMatch(table4, new RegExp(v6), `${node}: no IPv6 address in the ip table`);
    }
  });

  test('NodePort over IPv6: the outside client reaches a node’s IPv6 address', async () => {
    await kubectl('-n', 'default', 'patch', 'svc', 'both', '-p', '{"spec":{"type":"NodePort"}}');
    const nodePort = Number(
      (
        await kubectl('-n', 'default', 'get', 'svc', 'both', '-o', 'jsonpath={.spec.ports[0].nodePort}')
      ).trim(),
    );
    assert.ok(nodePort >= 30000 && nodePort <= 32767, String(nodePort));
    for (const node of ['2001:db8::10', '2001:db8::11']) {
      const url = `http://[${node}]:${nodePort}/`;
      const answer = await waitFor(`${url} from the client`, 60_000, async () => {
        const r = await run('ip', [
          'netns',
          'exec',
          `${prefix}-client`,
          'curl',
          '-sg',
          '--max-time',
          '3',
          url,
        ]);
        return r.code === 0 && /pod=both-/.test(r.stdout) ? r.stdout : undefined;
      });
      assert.match(answer, /^pod=both-\S+ client=/m, url);
    }
  });
});
