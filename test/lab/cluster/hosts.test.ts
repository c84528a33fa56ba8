import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  HostsFiles,
  podResolvConf,
  renderHosts,
  renderResolvConf,
  serviceName,
} from '../../../packages/lab/src/cluster/hosts.js';

const web = { namespace: 'svc', name: 'web', clusterIP: '198.19.0.2' };
const dns = { namespace: 'kube-system', name: 'dns', clusterIP: '198.19.0.10' };

function namesFor(text: string, ip: string): string[] {
  const line = text.split('\n').find((l) => l.split('\t')[0] === ip);
  return line ? line.split('\t').slice(1).join(' ').split(' ') : [];
}

function pod(spec: Record<string, unknown> = {}, namespace = 'svc'): unknown {
  return { metadata: { name: 'p', namespace }, spec };
}

describe('hosts files and resolv.conf', () => {
  test('a pod’s hosts file is the kubelet’s: localhost and itself, no Service names (those come from DNS)', () => {
    const text = renderHosts(
      { netns: 'p', podNamespace: 'svc', self: { name: 'web-1', ip: '198.18.10.2' } },
      [web, dns],
    );
    assert.deepEqual(namesFor(text, '198.18.10.2'), ['web-1']);
    assert.deepEqual(namesFor(text, '127.0.0.1'), ['localhost']);
    assert.deepEqual(namesFor(text, '198.19.0.2'), []);
    assert.doesNotMatch(text, /web\.svc/);
    const sub = renderHosts(
      {
        netns: 'p',
        podNamespace: 'svc',
        self: { name: 'db-0', ip: '198.18.10.3', fqdn: 'db-0.db.svc.svc.cluster.local' },
      },
      [],
    );
    assert.deepEqual(namesFor(sub, '198.18.10.3'), ['db-0.db.svc.svc.cluster.local', 'db-0']);
  });

  test('a node lists every Service by <svc>.<ns>, .svc, .svc.cluster.local; output is independent of input order', () => {
    const a = renderHosts({ netns: 'n' }, [web, dns]);
    const b = renderHosts({ netns: 'n' }, [dns, web]);
    assert.equal(a, b);
    assert.deepEqual(namesFor(a, '198.19.0.2'), ['web.svc', 'web.svc.svc', 'web.svc.svc.cluster.local']);
    assert.deepEqual(namesFor(a, '198.19.0.10'), [
      'dns.kube-system',
      'dns.kube-system.svc',
      'dns.kube-system.svc.cluster.local',
    ]);
  });

  test('ClusterFirst (the default): the cluster DNS, the namespace’s search path, ndots:5', () => {
    const conf = podResolvConf(pod(), '198.19.0.10');
    assert.ok(conf);
    assert.equal(
      renderResolvConf(conf),
      'search svc.svc.cluster.local svc.cluster.local cluster.local\nnameserver 198.19.0.10\noptions ndots:5\n',
    );
    assert.deepEqual(
      podResolvConf(pod({ dnsPolicy: 'ClusterFirstWithHostNet' }, 'a'), '198.19.0.10')?.searches,
      ['a.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
    );
  });

  test('Default keeps the host’s file; ClusterFirst without a cluster DNS falls back to it, as the kubelet does', () => {
    assert.equal(podResolvConf(pod({ dnsPolicy: 'Default' }), '198.19.0.10'), undefined);
    assert.equal(podResolvConf(pod(), undefined), undefined);
  });

  test('None is the dnsConfig alone; with ClusterFirst a dnsConfig is merged in, options by name', () => {
    const none = podResolvConf(
      pod({
        dnsPolicy: 'None',
        dnsConfig: { nameservers: ['198.18.0.53'], searches: ['example.test'], options: [{ name: 'edns0' }] },
      }),
      '198.19.0.10',
    );
    assert.deepEqual(none, { nameservers: ['198.18.0.53'], searches: ['example.test'], options: ['edns0'] });
    const merged = podResolvConf(
      pod({
        dnsConfig: {
          nameservers: ['198.19.0.10', '198.18.0.53'],
          searches: ['example.test'],
          options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
        },
      }),
      '198.19.0.10',
    );
    assert.deepEqual(merged, {
      nameservers: ['198.19.0.10', '198.18.0.53'],
      searches: ['svc.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'example.test'],
      options: ['ndots:2', 'edns0'],
    });
  });

  test('serviceName skips headless Services and objects without a ClusterIP', () => {
    assert.deepEqual(
      serviceName({ metadata: { name: 'web', namespace: 'svc' }, spec: { clusterIP: '198.19.0.2' } }),
      web,
    );
    assert.equal(
      serviceName({ metadata: { name: 'h', namespace: 'svc' }, spec: { clusterIP: 'None' } }),
      undefined,
    );
    assert.equal(serviceName({ metadata: { name: 'x', namespace: 'svc' }, spec: {} }), undefined);
    assert.equal(serviceName({ metadata: { name: 3 } }), undefined);
    assert.equal(serviceName(null), undefined);
  });

  test('HostsFiles writes /etc/netns/NS/hosts (and a pod’s resolv.conf) under its root and removes the directory', () => {
    const root = mkdtempSync(join(tmpdir(), 'kpts-hosts-'));
    const files = new HostsFiles((ns) => join(root, ns));
    files.write({ netns: 'kptslab-worker' }, [web]);
    const path = join(root, 'kptslab-worker', 'hosts');
    assert.deepEqual(namesFor(readFileSync(path, 'utf8'), '198.19.0.2'), [
      'web.svc',
      'web.svc.svc',
      'web.svc.svc.cluster.local',
    ]);
    assert.equal(existsSync(join(root, 'kptslab-worker', 'resolv.conf')), false, 'a node keeps the host’s');
    files.write({ netns: 'kptslab-worker' }, []);
    assert.deepEqual(namesFor(readFileSync(path, 'utf8'), '198.19.0.2'), []);
    files.remove('kptslab-worker');
    assert.equal(existsSync(join(root, 'kptslab-worker')), false);

    const conf = podResolvConf(pod(), '198.19.0.10');
    files.write({ netns: 'kptslab-p', podNamespace: 'svc', ...(conf ? { resolvConf: conf } : {}) }, [web]);
    assert.match(files.read('kptslab-p', 'resolv.conf') ?? '', /^nameserver 198\.19\.0\.10$/m);
    assert.doesNotMatch(files.read('kptslab-p') ?? '', /198\.19\.0\.2/);
    files.remove('kptslab-p');
    assert.equal(files.read('kptslab-p', 'resolv.conf'), undefined);
  });
});
