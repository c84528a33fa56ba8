import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostsFiles, renderHosts, serviceName } from '../../../packages/lab/src/cluster/hosts.js';

const web = { namespace: 'svc', name: 'web', clusterIP: '198.19.0.2' };
const dns = { namespace: 'kube-system', name: 'dns', clusterIP: '198.19.0.10' };

function namesFor(text: string, ip: string): string[] {
  const line = text.split('\n').find((l) => l.split('\t')[0] === ip);
  return line ? (line.split('\t')[1] ?? '').split(' ') : [];
}

describe('hosts files', () => {
  test('a pod resolves <svc>.<ns>, .svc, .svc.cluster.local, plain <svc> only in its own namespace, and itself', () => {
    const text = renderHosts(
      { netns: 'p', podNamespace: 'svc', self: { name: 'web-1', ip: '198.18.10.2' } },
      [web, dns],
    );
    assert.deepEqual(namesFor(text, '198.19.0.2'), [
      'web',
      'web.svc',
      'web.svc.svc',
      'web.svc.svc.cluster.local',
    ]);
    assert.deepEqual(namesFor(text, '198.19.0.10'), [
      'dns.kube-system',
      'dns.kube-system.svc',
      'dns.kube-system.svc.cluster.local',
    ]);
    assert.deepEqual(namesFor(text, '198.18.10.2'), ['web-1']);
    assert.deepEqual(namesFor(text, '127.0.0.1'), ['localhost']);
  });

  test('a node gets no short names; output is independent of input order', () => {
    const a = renderHosts({ netns: 'n' }, [web, dns]);
    const b = renderHosts({ netns: 'n' }, [dns, web]);
    assert.equal(a, b);
    assert.deepEqual(namesFor(a, '198.19.0.2'), ['web.svc', 'web.svc.svc', 'web.svc.svc.cluster.local']);
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

  test('HostsFiles writes /etc/netns/NS/hosts under its root and removes the directory', () => {
    const root = mkdtempSync(join(tmpdir(), 'kpts-hosts-'));
    const files = new HostsFiles((ns) => join(root, ns));
    files.write({ netns: 'kptslab-worker' }, [web]);
    const path = join(root, 'kptslab-worker', 'hosts');
    assert.deepEqual(namesFor(readFileSync(path, 'utf8'), '198.19.0.2'), [
      'web.svc',
      'web.svc.svc',
      'web.svc.svc.cluster.local',
    ]);
    files.write({ netns: 'kptslab-worker' }, []);
    assert.deepEqual(namesFor(readFileSync(path, 'utf8'), '198.19.0.2'), []);
    files.remove('kptslab-worker');
    assert.equal(existsSync(join(root, 'kptslab-worker')), false);
  });
});
