// e2eservice.TestJig, the parts the ported tests use: a Service named after the test with a unique `testid`
// label as its selector; create, update (retried on conflict) and the sanity check upstream runs on every answer;
// the serve-hostname pods behind it; waiting for an available endpoint.
import { randomUUID } from 'node:crypto';
import {
  expect,
  fail,
  NODE_PORT_RANGE,
  poll,
  POD_READY_BEFORE_TIMEOUT_MS,
  POLL_MS,
  SERVICE_ENDPOINTS_TIMEOUT_MS,
} from './framework.js';
import { field, fieldArray, fieldString, KubectlError, type KubeObject } from './kube.js';
import { AGNHOST_IMAGE, podIsReady } from './pods.js';
import type { UpstreamContext } from './registry-types.js';

export type ServiceTweak = (svc: KubeObject) => void;

export function serviceSpec(svc: KubeObject): KubeObject {
  return (svc.spec ??= {}) as KubeObject;
}

export function serviceType(svc: KubeObject): string {
  return fieldString(svc, 'spec', 'type') || 'ClusterIP';
}

export class TestJig {
  readonly labels: Readonly<Record<string, string>>;

  constructor(
    private readonly ctx: UpstreamContext,
    readonly name: string,
  ) {
    this.labels = { testid: `${name}-${randomUUID()}` };
  }

  private template(protocol: 'TCP' | 'UDP', port: number): KubeObject {
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: this.ctx.namespace, name: this.name, labels: { ...this.labels } },
      spec: { selector: { ...this.labels }, ports: [{ protocol, port }] },
    };
  }

  async createTCPServiceWithPort(tweak: ServiceTweak | undefined, port: number): Promise<KubeObject> {
    const svc = this.template('TCP', port);
    tweak?.(svc);
    const result = await this.ctx.kube.create(this.ctx.namespace, svc);
    return sanityCheckService(result, fieldString(svc, 'spec', 'type'));
  }

  createTCPService(tweak?: ServiceTweak): Promise<KubeObject> {
    return this.createTCPServiceWithPort(tweak, 80);
  }

  async createExternalNameService(tweak?: ServiceTweak): Promise<KubeObject> {
    const svc: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: this.ctx.namespace, name: this.name, labels: { ...this.labels } },
      spec: { selector: { ...this.labels }, externalName: 'foo.example.com', type: 'ExternalName' },
    };
    tweak?.(svc);
    const result = await this.ctx.kube.create(this.ctx.namespace, svc);
    return sanityCheckService(result, 'ExternalName');
  }

  /** UpdateService: get, change, update; up to three tries when the update conflicts. */
  async updateService(update: ServiceTweak): Promise<KubeObject> {
    for (let i = 0; i < 3; i++) {
      const svc = await this.ctx.kube.get(this.ctx.namespace, 'service', this.name);
      update(svc);
      try {
        const result = await this.ctx.kube.update(this.ctx.namespace, svc);
        return sanityCheckService(result, serviceType(svc));
      } catch (e) {
        if (!(e instanceof KubectlError) || !/Conflict|the object has been modified/i.test(e.message))
          throw e;
      }
    }
    fail(`too many retries updating Service "${this.name}"`);
  }

  /**
   * CreateServicePods: upstream runs a ReplicationController of `agnhost serve-hostname --http=false --tcp --udp`
   * with the jig's labels. The lab has no ReplicationController, so a Deployment of the same pod template stands
   * in (what jig.Run uses upstream); like RunRC it waits for every replica.
   */
  createServicePods(replicas: number): Promise<string[]> {
    return runServeHostnameReplicas(this.ctx, this.name, this.labels, replicas, [
      '/agnhost',
      'serve-hostname',
      '--http=false',
      '--tcp',
      '--udp',
    ]);
  }

  /** waitForAvailableEndpoint: an EndpointSlice of the Service with a ready endpoint. */
  async waitForAvailableEndpoint(timeoutMs = SERVICE_ENDPOINTS_TIMEOUT_MS): Promise<void> {
    const ok = await poll(
      1_000,
      timeoutMs,
      async () => {
        const slices = await this.ctx.kube.list(
          this.ctx.namespace,
          'endpointslices',
          `kubernetes.io/service-name=${this.name}`,
        );
        return slices.some((s) =>
          fieldArray(s, 'endpoints').some(
            (e) => fieldArray(e, 'addresses').length > 0 && field(e, 'conditions', 'ready') !== false,
          ),
        );
      },
      this.ctx.signal,
    );
    if (!ok)
      fail(
        `no subset of available IP address found for the endpoint ${this.name} within timeout ${timeoutMs / 1000}s`,
      );
  }
}

/** sanityCheckService: the type asked for, a ClusterIP unless ExternalName, NodePorts exactly where due and in range. */
export function sanityCheckService(svc: KubeObject, requestedType: string): KubeObject {
  const type = requestedType || 'ClusterIP';
  expect(
    serviceType(svc) === type,
    `unexpected Spec.Type (${serviceType(svc)}) for service, expected ${type}`,
  );
  const clusterIP = fieldString(svc, 'spec', 'clusterIP');
  const externalName = fieldString(svc, 'spec', 'externalName');
  if (type !== 'ExternalName') {
    expect(externalName === '', `unexpected Spec.ExternalName (${externalName}) for service, expected empty`);
    expect(clusterIP !== '', "didn't get ClusterIP for non-ExternalName service");
  } else {
    expect(
      clusterIP === '',
      `unexpected Spec.ClusterIP (${clusterIP}) for ExternalName service, expected empty`,
    );
  }
  const expectNodePorts = type !== 'ClusterIP' && type !== 'ExternalName';
  fieldArray(svc, 'spec', 'ports').forEach((p, i) => {
    const nodePort = Number(field(p, 'nodePort') ?? 0);
    expect(
      (nodePort !== 0) === expectNodePorts,
      `unexpected Spec.Ports[${i}].NodePort (${nodePort}) for service`,
    );
    if (nodePort !== 0)
      expect(
        nodePort >= NODE_PORT_RANGE.base && nodePort < NODE_PORT_RANGE.base + NODE_PORT_RANGE.size,
        `out-of-range nodePort (${nodePort}) for service`,
      );
  });
  return svc;
}

/**
 * RunRC's replacement (see createServicePods): a Deployment `name` of agnhost pods labelled name=<name> plus
 * `labels`, running `command`; waits, polling every 3 s as RunRC does, until all `replicas` are Ready. Returns their
 * names, sorted.
 */
export async function runServeHostnameReplicas(
  ctx: UpstreamContext,
  name: string,
  labels: Readonly<Record<string, string>>,
  replicas: number,
  command: readonly string[],
): Promise<string[]> {
  const podLabels = { name, ...labels };
  await ctx.kube.create(ctx.namespace, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: podLabels },
    spec: {
      replicas,
      selector: { matchLabels: podLabels },
      template: {
        metadata: { labels: podLabels },
        spec: {
          containers: [{ name, image: AGNHOST_IMAGE, command: [...command] }],
          terminationGracePeriodSeconds: 0,
        },
      },
    },
  });
  const selector = Object.entries(podLabels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  let ready: string[] = [];
  const ok = await poll(
    3_000,
    POD_READY_BEFORE_TIMEOUT_MS,
    async () => {
      const pods = await ctx.kube.list(ctx.namespace, 'pods', selector);
      const live = pods.filter((p) => field(p, 'metadata', 'deletionTimestamp') === undefined);
      ready = live.filter(podIsReady).map((p) => fieldString(p, 'metadata', 'name'));
      return live.length === replicas && ready.length === replicas;
    },
    ctx.signal,
  );
  if (!ok)
    fail(
      `only ${ready.length} of ${replicas} pods of ${name} ready within ${POD_READY_BEFORE_TIMEOUT_MS / 1000} s`,
    );
  return ready.sort();
}

/** StopServeHostnameService: delete the pods' controller and wait for its pods to go, then the Service. */
export async function stopServeHostnameService(ctx: UpstreamContext, name: string): Promise<void> {
  await ctx.kube.delete(ctx.namespace, 'deployment', name);
  const gone = await poll(
    POLL_MS,
    POD_READY_BEFORE_TIMEOUT_MS,
    async () => (await ctx.kube.list(ctx.namespace, 'pods', `name=${name}`)).length === 0,
    ctx.signal,
  );
  if (!gone) fail(`pods of ${name} still exist after deleting their Deployment`);
  await ctx.kube.delete(ctx.namespace, 'service', name);
}
