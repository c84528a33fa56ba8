// service.go's two API lifecycle [Conformance] tests: an Endpoints object and a Service's /status, each created,
// changed and deleted while a watch (watchtools.Until from a list's resourceVersion) must see every step.
//
// Upstream writes 10.0.0.24 / 10.0.0.25 into the Endpoints and 203.0.113.1 as the load balancer's ingress IP; lab
// addresses must stay inside 198.18.0.0/15, so these use 198.18.250.24 / 198.18.250.25 and 198.18.250.1, which no
// node, pod or Service of the lab holds (nodes 198.18.0.x, the client 198.18.1.x, pods 198.18.10-15.x, Services
// 198.19.x).
import { expect, fail } from './framework.js';
import { field, fieldArray, fieldString, KubectlError, type KubeObject } from './kube.js';
import type { UpstreamContext } from './registry-types.js';

/** service.go's svcReadyTimeout. */
const SVC_READY_TIMEOUT_MS = 60_000;
const ENDPOINT_WATCH_TIMEOUT_MS = 30_000;

/** A List's resourceVersion (kubectl's own -o json drops it, so the raw API answer). */
async function listResourceVersion(ctx: UpstreamContext, path: string): Promise<KubeObject> {
  return JSON.parse(await ctx.kube.mustRun(['get', '--raw', path])) as KubeObject;
}

function labels(obj: unknown): Record<string, string> {
  return (field(obj, 'metadata', 'labels') ?? {}) as Record<string, string>;
}

function annotations(obj: unknown): Record<string, string> {
  return (field(obj, 'metadata', 'annotations') ?? {}) as Record<string, string>;
}

/** watchtools.Until that fails the test as upstream's ExpectNoError does when the watch ends unmet. */
async function until(
  ctx: UpstreamContext,
  path: (rv: string) => string,
  rv: string,
  timeoutMs: number,
  condition: (type: string, obj: KubeObject) => boolean,
  failure: string,
): Promise<void> {
  const met = await ctx.kube.watchUntil(path, rv, timeoutMs, (type, obj) => {
    const found = condition(type, obj);
    if (!found) ctx.log(`observed event ${type} of ${fieldString(obj, 'metadata', 'name')}`);
    return found;
  });
  if (!met) fail(`${failure}: timed out waiting for the condition`);
}

export async function endpointLifecycle(ctx: UpstreamContext): Promise<void> {
  const ns = ctx.namespace;
  const testEndpointName = 'testservice';
  const selector = encodeURIComponent('test-endpoint-static=true');
  const watchPath = (rv: string): string =>
    `/api/v1/namespaces/${ns}/endpoints?watch=1&resourceVersion=${rv}&labelSelector=${selector}`;
  const ours = (obj: KubeObject): boolean =>
    fieldString(obj, 'metadata', 'name') === testEndpointName &&
    labels(obj)['test-endpoint-static'] === 'true';
  /** watchtools.Until(30 s, rv, w, an event of `type` for our Endpoints). */
  const waitFor = (type: 'ADDED' | 'MODIFIED' | 'DELETED', from: KubeObject): Promise<void> =>
    until(
      ctx,
      watchPath,
      fieldString(from, 'metadata', 'resourceVersion'),
      ENDPOINT_WATCH_TIMEOUT_MS,
      (t, obj) => t === type && ours(obj),
      `failed to see ${type} event`,
    );

  let endpointsList = await listResourceVersion(ctx, `/api/v1/endpoints?labelSelector=${selector}`);
  ctx.step('creating an Endpoint');
  await ctx.kube.create(ns, {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: testEndpointName, labels: { 'test-endpoint-static': 'true' } },
    subsets: [{ addresses: [{ ip: '198.18.250.24' }], ports: [{ name: 'http', port: 80, protocol: 'TCP' }] }],
  });
  ctx.step('waiting for available Endpoint');
  await waitFor('ADDED', endpointsList);

  ctx.step('listing all Endpoints');
  endpointsList = await listResourceVersion(ctx, `/api/v1/endpoints?labelSelector=${selector}`);
  const foundEndpoint = fieldArray(endpointsList, 'items').find(
    (e) =>
      fieldString(e, 'metadata', 'name') === testEndpointName &&
      fieldString(e, 'metadata', 'namespace') === ns,
  ) as KubeObject | undefined;
  if (!foundEndpoint) fail('unable to find Endpoint Service in list of Endpoints');

  ctx.step('updating the Endpoint');
  (foundEndpoint.metadata as KubeObject).labels = { ...labels(foundEndpoint), 'test-service': 'updated' };
  await ctx.kube.update(ns, { apiVersion: 'v1', kind: 'Endpoints', ...foundEndpoint });
  await waitFor('MODIFIED', endpointsList);

  ctx.step('fetching the Endpoint');
  let endpoints = await ctx.kube.get(ns, 'endpoints', testEndpointName);
  expect(
    labels(foundEndpoint)['test-service'] === 'updated',
    `failed to update Endpoint ${testEndpointName} in namespace ${ns} label not updated`,
  );

  const endpointPatch = {
    metadata: { labels: { 'test-service': 'patched' } },
    subsets: [{ addresses: [{ ip: '198.18.250.25' }], ports: [{ name: 'http-test', port: 8080 }] }],
  };
  ctx.step('patching the Endpoint');
  await ctx.kube.mustRun([
    '-n',
    ns,
    'patch',
    'endpoints',
    testEndpointName,
    '--type=strategic',
    '-p',
    JSON.stringify(endpointPatch),
  ]);
  await waitFor('MODIFIED', endpoints);

  ctx.step('fetching the Endpoint');
  endpoints = await ctx.kube.get(ns, 'endpoints', testEndpointName);
  expect(labels(endpoints)['test-service'] === 'patched', 'failed to patch Endpoint with Label');
  expect(
    fieldString(endpoints, 'subsets', 0, 'addresses', 0, 'ip') === '198.18.250.25',
    'failed to patch Endpoint',
  );
  expect(
    fieldString(endpoints, 'subsets', 0, 'ports', 0, 'name') === 'http-test',
    'failed to patch Endpoint',
  );
  expect(field(endpoints, 'subsets', 0, 'ports', 0, 'port') === 8080, 'failed to patch Endpoint');

  ctx.step('deleting the Endpoint by Collection');
  await ctx.kube.mustRun(['delete', '--raw', `/api/v1/namespaces/${ns}/endpoints?labelSelector=${selector}`]);
  ctx.step('waiting for Endpoint deletion');
  await waitFor('DELETED', endpoints);

  ctx.step('fetching the Endpoint');
  const r = await ctx.kube.run(['-n', ns, 'get', 'endpoints', testEndpointName, '-o', 'json']);
  expect(r.code !== 0, 'should not be able to fetch Endpoint');
}

export async function serviceStatusLifecycle(ctx: UpstreamContext): Promise<void> {
  const ns = ctx.namespace;
  const testSvcName = `test-service-${Math.random().toString(36).slice(2, 7)}`;
  const selector = encodeURIComponent('test-service-static=true');
  const watchPath = (rv: string): string =>
    `/api/v1/namespaces/${ns}/services?watch=1&resourceVersion=${rv}&labelSelector=${selector}`;
  const svcList = await listResourceVersion(ctx, `/api/v1/services?labelSelector=${selector}`);
  const listRV = fieldString(svcList, 'metadata', 'resourceVersion');
  const named = (obj: KubeObject): boolean =>
    fieldString(obj, 'metadata', 'name') === testSvcName && fieldString(obj, 'metadata', 'namespace') === ns;
  /** A step, then watchtools.Until(svcReadyTimeout, the first list's resourceVersion, …), then a log line. */
  const watchStep = async (
    step: string,
    failure: string,
    condition: (type: string, obj: KubeObject) => boolean,
    done: string,
  ): Promise<void> => {
    ctx.step(step);
    await until(ctx, watchPath, listRV, SVC_READY_TIMEOUT_MS, condition, failure);
    ctx.log(done);
  };

  ctx.step('creating a Service');
  await ctx.kube.create(ns, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: testSvcName, labels: { 'test-service-static': 'true' } },
    spec: {
      type: 'LoadBalancer',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 80 }],
      loadBalancerClass: 'example.com/internal-vip',
    },
  });
  await watchStep(
    'watching for the Service to be added',
    `Failed to locate Service ${testSvcName} in namespace ${ns}`,
    (_, svc) => named(svc) && labels(svc)['test-service-static'] === 'true',
    `Service ${testSvcName} created`,
  );

  ctx.step('Getting /status');
  const statusPath = `/api/v1/namespaces/${ns}/services/${testSvcName}/status`;
  const svcStatus = JSON.parse(await ctx.kube.mustRun(['get', '--raw', statusPath])) as KubeObject;
  ctx.log(
    `Service ${testSvcName} has LoadBalancer: ${JSON.stringify(field(svcStatus, 'status', 'loadBalancer'))}`,
  );

  ctx.step('patching the ServiceStatus');
  const lbStatus = { ingress: [{ ip: '198.18.250.1' }] };
  await ctx.kube.mustRun([
    '-n',
    ns,
    'patch',
    'service',
    testSvcName,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({
      metadata: { annotations: { patchedstatus: 'true' } },
      status: { loadBalancer: lbStatus },
    }),
  ]);
  await watchStep(
    'watching for the Service to be patched',
    `failed to locate Service ${testSvcName} in namespace ${ns}`,
    (_, svc) => named(svc) && annotations(svc).patchedstatus === 'true',
    `Service ${testSvcName} has service status patched`,
  );

  ctx.step('updating the ServiceStatus');
  const condition = { type: 'StatusUpdate', status: 'True', reason: 'E2E', message: 'Set from e2e test' };
  for (let attempt = 0; ; attempt++) {
    // retry.RetryOnConflict(retry.DefaultRetry, …): get, add the condition, UpdateStatus.
    const statusToUpdate = await ctx.kube.get(ns, 'service', testSvcName);
    const status = (statusToUpdate.status ??= {}) as KubeObject;
    status.conditions = [...fieldArray(status, 'conditions'), condition];
    try {
      const updated = await ctx.kube.json(
        ['-n', ns, 'replace', '--subresource=status', '-f', '-'],
        JSON.stringify(statusToUpdate),
      );
      ctx.log(`updatedStatus.Conditions: ${JSON.stringify(field(updated, 'status', 'conditions'))}`);
      break;
    } catch (e) {
      if (!(e instanceof KubectlError) || !/Conflict|modified/i.test(e.message) || attempt >= 4)
        fail(`Failed to UpdateStatus. ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  await watchStep(
    'watching for the Service to be updated',
    `failed to locate Service ${testSvcName} in namespace ${ns}`,
    (_, svc) => {
      if (!named(svc) || annotations(svc).patchedstatus !== 'true') return false;
      // upstream's loop decides on the first condition it looks at.
      const first = fieldArray(svc, 'status', 'conditions')[0];
      return (
        first !== undefined &&
        field(first, 'type') === 'StatusUpdate' &&
        field(first, 'reason') === 'E2E' &&
        field(first, 'message') === 'Set from e2e test'
      );
    },
    `Service ${testSvcName} has service status updated`,
  );

  ctx.step('patching the service');
  await ctx.kube.mustRun([
    '-n',
    ns,
    'patch',
    'service',
    testSvcName,
    '--type=strategic',
    '-p',
    JSON.stringify({ metadata: { labels: { 'test-service': 'patched' } } }),
  ]);
  await watchStep(
    'watching for the Service to be patched',
    `failed to locate Service ${testSvcName} in namespace ${ns}`,
    (_, svc) => named(svc) && labels(svc)['test-service'] === 'patched',
    `Service ${testSvcName} patched`,
  );

  ctx.step('deleting the service');
  await ctx.kube.mustRun(['-n', ns, 'delete', 'service', testSvcName, '--wait=false']);
  await watchStep(
    'watching for the Service to be deleted',
    `failed to delete Service ${testSvcName} in namespace ${ns}`,
    (type, svc) => type === 'DELETED' && named(svc) && labels(svc)['test-service-static'] === 'true',
    `Service ${testSvcName} deleted`,
  );
}
