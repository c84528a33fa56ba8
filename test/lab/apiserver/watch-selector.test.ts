// A watch with a selector, as kube-proxy opens them (kube/watches.ts: Services without service-proxy-name and not
// headless, EndpointSlices not headless), against the lab API server while real kubectl relabels the objects: an
// object that leaves the selection arrives as DELETED and one that enters it as ADDED, as kube-apiserver's
// filtered watch sends them (the e2e test "should implement service.kubernetes.io/service-proxy-name" relies on it).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { startApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { ENDPOINT_SLICES, SERVICES } from '../../../packages/agent/src/kube/watches.js';
import type { ResourceSpec } from '../../../packages/agent/src/kube/reflector.js';
import { toolOptions } from '../tools.js';
import { waitFor } from '../../helpers/wait-for.js';

const run = promisify(execFile);

const SERVICE = {
  metadata: { name: 'web' },
  spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
};
const SLICE = {
  metadata: { name: 'web-abc', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  endpoints: [{ addresses: ['198.18.10.2'], conditions: { ready: true } }],
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
};

describe('filtered watches as kube-proxy opens them', toolOptions(['kubectl']), () => {
  for (const c of [
    {
      what: 'a Service labelled service-proxy-name',
      spec: SERVICES,
      kind: 'Service',
      object: SERVICE,
      resource: 'svc/web',
      label: 'service.kubernetes.io/service-proxy-name',
    },
    {
      what: 'an EndpointSlice labelled headless',
      spec: ENDPOINT_SLICES,
      kind: 'EndpointSlice',
      object: SLICE,
      resource: 'endpointslice/web-abc',
      label: 'service.kubernetes.io/headless',
    },
  ] as const)
    test(`${c.what} leaves the watch as DELETED, and comes back as ADDED when the label goes`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'kpts-watch-selector-'));
      const kubeconfig = join(dir, 'kubeconfig');
      const server = await startApiServer({ kubeconfigPath: kubeconfig });
      const events: string[] = [];
      const abort = new AbortController();
      try {
        assert.ok(server.registry.create(resourceByKind(c.kind), 'default', c.object).ok);
        const kc = new KubeConfig();
        kc.loadFromString(server.kubeconfig());
        const query = selectorsOf(c.spec);
        const req = await new Watch(kc).watch(
          c.spec.path,
          query,
          // Only the test's object: the server's own default/kubernetes Service and slice are watched too.
          (type: string, obj: { metadata?: { name?: string } }) => {
            if (obj.metadata?.name === c.object.metadata.name) events.push(`${type} ${obj.metadata.name}`);
          },
          () => undefined,
        );
        abort.signal.addEventListener('abort', () => req.abort());
        const kubectl = (...args: string[]) =>
          run('kubectl', ['--kubeconfig', kubeconfig, '-n', 'default', ...args]);
        const seen = (n: number) =>
          waitFor(`${n} watch events (${events.join(', ')})`, () => (events.length >= n ? true : undefined));
        await seen(1);
        await kubectl('label', c.resource, `${c.label}=foo-bar`);
        await seen(2);
        await kubectl('label', c.resource, `${c.label}-`);
        await seen(3);
        // A label the selectors do not name changes nothing about the selection: a MODIFIED.
        await kubectl('label', c.resource, 'team=network');
        await seen(4);
        const name = String(c.object.metadata.name);
        assert.deepEqual(events, [`ADDED ${name}`, `DELETED ${name}`, `ADDED ${name}`, `MODIFIED ${name}`]);
      } finally {
        abort.abort();
        await server.stop();
        await rm(dir, { recursive: true, force: true });
      }
    });
});

/** The watch query kube-proxy sends for a resource: its label and field selectors. */
function selectorsOf(spec: ResourceSpec): Record<string, string> {
  return {
    ...(spec.labelSelector ? { labelSelector: spec.labelSelector } : {}),
    ...(spec.fieldSelector ? { fieldSelector: spec.fieldSelector } : {}),
  };
}
