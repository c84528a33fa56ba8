// `kube-proxy-ts render`: what a node would program for a file of manifests, and the clear errors around it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { renderCommand } from '../../packages/agent/src/cli/render.js';
import { nftOperationLines } from '../backends/nftables/helpers.js';
import { recordingFileIO } from '../helpers/command-io.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';

const EXAMPLE = readFileSync(new URL('../../examples/cluster.yaml', import.meta.url), 'utf8');

function run(argv: string[], files: Record<string, string> = { 'cluster.yaml': EXAMPLE }) {
  const { io, printed } = recordingFileIO(files, 'Host-Name');
  const code = renderCommand(argv, io);
  return { code, ...printed };
}

// upstream-backends.md §1.5, computed here independently: standard base32 of SHA-256, first 8 characters.
function nftChainBase(name: string): string {
  const digest = createHash('sha256').update(name).digest();
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const byte of digest) bits += byte.toString(2).padStart(8, '0');
  let out = '';
  for (let i = 0; i + 5 <= bits.length && out.length < 8; i += 5)
    out += alphabet[parseInt(bits.slice(i, i + 5), 2)];
  return `${out}-${name}`;
}

const BASE = ['-f', 'cluster.yaml', '--cluster-cidr', '198.18.8.0/21', '--service-cidrs', '198.19.0.0/16'];

describe('render --proxy-mode nftables', () => {
  test('programs the example as the node named by its only Node object', () => {
    const { code, stdout, stderr } = run(BASE);
    assert.equal(code, 0, stderr);
    const web = nftChainBase('svc/web/tcp/http');
    // One line per operation (render writes a set's elements as one statement; checked below).
    const lines = nftOperationLines(stdout);
    // The ClusterIP is one service-ips element pointing at the per-service chain ...
    assert.ok(
      lines.includes(
        `add element ip kube-proxy service-ips { 198.19.0.10 . tcp . 80 : goto service-${web} }`,
      ),
      stdout,
    );
    // ... whose single rule dispatches with numgen over the three endpoints, in endpoint order.
    assert.ok(
      lines.includes(
        `add rule ip kube-proxy service-${web} meta l4proto tcp dnat ip addr . port to numgen random mod 3 map ` +
          '{ 0 : 198.18.10.2 . 8080 , 1 : 198.18.11.2 . 8080 , 2 : 198.18.11.3 . 8080 }',
      ),
    );
    // A Service without endpoints is rejected, with its name as the element comment.
    assert.ok(
      lines.includes(
        'add element ip kube-proxy no-endpoint-services { 198.19.0.30 . tcp . 80 comment "svc/empty" : goto reject-chain }',
      ),
    );
    // eTP=Local on a node (worker) with no local endpoint: the NodePort drops; the ClusterIP still works.
    assert.ok(
      lines.includes(
        'add element ip kube-proxy no-endpoint-nodeports { udp . 30053 comment "svc/dns:dns" : drop }',
      ),
    );
    // "primary" NodePort addresses: the node's InternalIP from the Node object.
    assert.ok(lines.includes('add element ip kube-proxy nodeport-ips { 198.18.0.3 }'));
    // The production mark is Go's %#08x of 1<<14.
    assert.match(stdout, /mark set mark or 0x00004000/);
    assert.equal(stderr, '');
  });

  test("writes a set's elements as one statement, after the set and every chain they jump to", () => {
    const { code, stdout, stderr } = run(BASE);
    assert.equal(code, 0, stderr);
    const written = stdout.split('\n');
    const statements = written.filter((l) => l.startsWith('add element ip kube-proxy service-ips '));
    assert.equal(statements.length, 1, stdout);
    const statement = statements[0] ?? '';
    const elements = nftOperationLines(statement);
    assert.ok(elements.length >= 2, statement);
    const at = written.indexOf(statement);
    assert.ok(written.findIndex((l) => l.startsWith('add map ip kube-proxy service-ips ')) < at);
    for (const element of elements) {
      const target = / : goto (\S+) \}$/.exec(element)?.[1];
      assert.ok(target !== undefined, element);
      const made = written.findIndex((l) => l === `add chain ip kube-proxy ${target}`);
      assert.ok(made >= 0 && made < at, `chain ${target} is made before the statement that jumps to it`);
    }
  });

  test('the hostname decides which endpoints are local', () => {
    const asControlPlane = run([...BASE, '--hostname-override', 'Control-Plane', '--node-ip', '198.18.0.2']);
    assert.equal(asControlPlane.code, 0, asControlPlane.stderr);
    const lines = nftOperationLines(asControlPlane.stdout);
    const dns = nftChainBase('svc/dns/udp/dns');
    // control-plane has the dns endpoint, so its NodePort goes to the external chain and on to local endpoints.
    assert.ok(
      lines.includes(`add element ip kube-proxy service-nodeports { udp . 30053 : goto external-${dns} }`),
    );
    assert.ok(lines.includes('add element ip kube-proxy nodeport-ips { 198.18.0.2 }'));
  });

  test('IPv6 renders the ip6 table', () => {
    const v6 = `
apiVersion: v1
kind: Service
metadata: {name: s, namespace: n}
spec: {clusterIP: "2001:db8::10", ipFamilies: [IPv6], ports: [{port: 80}]}
`;
    const r = run(['-f', 'v6.yaml', '--node-ip', '2001:db8::2', '--hostname-override', 'n1'], {
      'v6.yaml': v6,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^add table ip6 kube-proxy/m);
    assert.ok(
      nftOperationLines(r.stdout).includes('add element ip6 kube-proxy cluster-ips { 2001:db8::10 }'),
    );
  });

  test('bad documents are reported and the rest is still rendered', () => {
    const text = `${EXAMPLE}\n---\n- just\n- a list\n---\nkind: Service\nmetadata: {name: broken, namespace: svc}\nspec: {clusterIP: "999.1.1.1", ports: [{port: 80}]}\n`;
    const r = run(BASE, { 'cluster.yaml': text });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /not an object/);
    assert.match(r.stderr, /skipped Service svc\/broken: .*999\.1\.1\.1/);
    assert.match(r.stdout, /198\.19\.0\.10 \. tcp \. 80/);
  });

  test('usage errors name the flag', () => {
    assert.equal(run([]).code, 2);
    const bad = run([...BASE, '--proxy-mode', 'ipvsx']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--proxy-mode: unknown mode "ipvsx"/);
    const bit = run([...BASE, '--masquerade-bit', '40']);
    assert.match(bit.stderr, /--masquerade-bit: must be an integer 0-31/);
    const missing = run(['-f', 'nope.yaml']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot read nope\.yaml/);
  });
});

describe('render --proxy-mode iptables', () => {
  test('prints iptables-restore input with upstream chain names', () => {
    const r = run([...BASE, '--proxy-mode', 'iptables', '--random-fully=false']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\*filter$/m);
    assert.match(r.stdout, /^\*nat$/m);
    assert.match(
      r.stdout,
      /-A KUBE-SERVICES -m comment --comment "svc\/web:http cluster IP" -m tcp -p tcp -d 198\.19\.0\.10 --dport 80 -j KUBE-SVC-/,
    );
    assert.match(r.stdout, /-m statistic --mode random --probability 0\.3333333333/);
    assert.match(
      r.stdout,
      /"svc\/empty has no endpoints" -m tcp -p tcp -d 198\.19\.0\.30 --dport 80 -j REJECT/,
    );
    assert.doesNotMatch(r.stdout, /--random-fully/);
  });
});

describe('render --proxy-mode ipvs', () => {
  /** The lines of one section of the output, by its heading's first words. */
  function section(text: string, heading: string): string[] {
    const parts = text.split(/^# (?=kube-ipvs0|ipsets|IPVS|iptables)/m);
    const part = parts.find((p) => p.startsWith(heading)) ?? '';
    return part
      .split('\n')
      .slice(1)
      .filter((l) => l !== '' && !l.startsWith('#'));
  }

  test('prints kube-ipvs0, the ipsets, the virtual servers and the iptables glue, each for its tool', () => {
    const r = run([...BASE, '--proxy-mode', 'ipvs', '--random-fully=false']);
    assert.equal(r.code, 0, r.stderr);
    const ipvsadm = section(r.stdout, 'IPVS');
    // svc/web: three endpoints, round robin, masquerading, weight 1.
    assert.deepEqual(
      ipvsadm.filter((l) => l.includes('198.19.0.10:80')),
      [
        '-A -t 198.19.0.10:80 -s rr',
        '-a -t 198.19.0.10:80 -r 198.18.10.2:8080 -m -w 1',
        '-a -t 198.19.0.10:80 -r 198.18.11.2:8080 -m -w 1',
        '-a -t 198.19.0.10:80 -r 198.18.11.3:8080 -m -w 1',
      ],
    );
    // ClientIP affinity is IPVS persistence with the Service's timeout; no endpoints, no real server.
    assert.ok(ipvsadm.includes('-A -t 198.19.0.20:80 -s rr -p 10800'), ipvsadm.join('\n'));
    assert.deepEqual(
      ipvsadm.filter((l) => l.includes('198.19.0.30')),
      ['-A -t 198.19.0.30:80 -s rr'],
    );
    // The UDP NodePort on the node's address, with externalTrafficPolicy Local falling back to the cluster's
    // endpoints (upstream's IPVS does, k/k #97081) and its port in the Local set.
    assert.ok(ipvsadm.includes('-a -u 198.18.0.3:30053 -r 198.18.10.5:53 -m -w 1'));
    const ipsets = section(r.stdout, 'ipsets');
    assert.ok(ipsets.includes('add KUBE-CLUSTER-IP 198.19.0.53,udp:53'));
    assert.ok(ipsets.includes('add KUBE-NODE-PORT-LOCAL-UDP 30053'));
    assert.ok(ipsets.includes('add KUBE-IPVS-IPS 198.19.0.10'));
    assert.deepEqual(section(r.stdout, 'kube-ipvs0').slice(0, 2), [
      'link add kube-ipvs0 type dummy',
      'address add 198.19.0.10/32 dev kube-ipvs0',
    ]);
    assert.match(
      r.stdout,
      /^-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip \+ port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 198\.18\.8\.0\/21 -j KUBE-MARK-MASQ$/m,
    );
    assert.match(
      r.stdout,
      /^# iptables -t filter -I INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER$/m,
    );
  });
});

describe('render --nftables-layout flat', () => {
  const FLAT = [...BASE, '--nftables-layout', 'flat'];

  test('the ClusterIP dispatches through a shared chain by endpoint count, endpoints by slot', () => {
    const r = run(FLAT);
    assert.equal(r.code, 0, r.stderr);
    const lines = nftOperationLines(r.stdout);
    assert.ok(
      lines.includes(
        'add element ip kube-proxy service-ips { 198.19.0.10 . tcp . 80 : goto dispatch-tcp-3 }',
      ),
      r.stdout,
    );
    assert.ok(
      lines.includes(
        'add rule ip kube-proxy dispatch-tcp-3 dnat ip to ip daddr . meta l4proto . th dport . numgen random mod 3 map @endpoints-tcp',
      ),
    );
    // In endpoint order, one slot each.
    for (const [slot, ip] of ['198.18.10.2', '198.18.11.2', '198.18.11.3'].entries())
      assert.ok(
        lines.includes(
          `add element ip kube-proxy endpoints-tcp { 198.19.0.10 . tcp . 80 . ${slot} : ${ip} . 8080 }`,
        ),
      );
    // No chain per service port: every non-fixed chain is a dispatch chain.
    const chains = lines.filter((l) => l.startsWith('add chain')).map((l) => l.split(' ')[4] ?? '');
    assert.deepEqual(
      chains.filter((c) => c.includes('/')),
      [],
    );
    assert.ok(chains.includes('dispatch-tcp-3'));
    // No packet mark carries the slot: the only mark rules are the masquerade bit's.
    assert.ok(
      lines
        .filter((l) => l.includes('mark set'))
        .every(
          (l) => l.includes('mark set mark or 0x00004000') || l.includes('mark set mark xor 0x00004000'),
        ),
    );
  });

  test('usage errors name the flag', () => {
    const bad = run([...BASE, '--nftables-layout', 'tall']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--nftables-layout: unknown layout "tall" \(upstream or flat\)/);
    const ipt = run([...BASE, '--proxy-mode', 'iptables', '--nftables-layout', 'flat']);
    assert.equal(ipt.code, 2);
    assert.match(ipt.stderr, /--nftables-layout: only with --proxy-mode nftables/);
  });
});

describe('render output is accepted by the real tools', () => {
  test(
    'nft -c and iptables-restore --test accept it, inside a private namespace',
    kernelOptions(['ip', 'nft', 'iptables-restore', 'iptables-save', 'ipset']),
    () => {
      const ns = `${runPrefix()}-render`;
      execFileSync('ip', ['netns', 'add', ns]);
      try {
        const nft = run(BASE);
        execFileSync('ip', ['netns', 'exec', ns, 'nft', '-c', '-f', '-'], { input: nft.stdout });
        const flat = run([...BASE, '--nftables-layout', 'flat']);
        assert.equal(flat.code, 0, flat.stderr);
        execFileSync('ip', ['netns', 'exec', ns, 'nft', '-c', '-f', '-'], { input: flat.stdout });
        const ipt = run([...BASE, '--proxy-mode', 'iptables']);
        execFileSync('ip', ['netns', 'exec', ns, 'iptables-restore', '--test', '--noflush'], {
          input: ipt.stdout,
        });
        // ipvs mode: the ipsets load, then the rules that match them (this kernel has no IPVS for the rest).
        const ipvs = run([...BASE, '--proxy-mode', 'ipvs']).stdout;
        const sets = ipvs.slice(ipvs.indexOf('# ipsets'), ipvs.indexOf('# IPVS'));
        execFileSync('ip', ['netns', 'exec', ns, 'ipset', 'restore', '-exist'], { input: sets });
        const rules = ipvs.slice(ipvs.indexOf('# iptables ('));
        execFileSync('ip', ['netns', 'exec', ns, 'iptables-restore', '--noflush'], { input: rules });
        const saved = execFileSync('ip', ['netns', 'exec', ns, 'iptables-save'], { encoding: 'utf8' });
        assert.match(
          saved,
          /-A KUBE-IPVS-FILTER -m set --match-set KUBE-IPVS-IPS dst -m conntrack --ctstate NEW -j REJECT|-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT/,
        );
        const listed = execFileSync('ip', ['netns', 'exec', ns, 'ipset', 'list', 'KUBE-CLUSTER-IP'], {
          encoding: 'utf8',
        });
        assert.match(listed, /^198\.19\.0\.10,tcp:80$/m);
      } finally {
        execFileSync('ip', ['netns', 'del', ns]);
      }
    },
  );
});
