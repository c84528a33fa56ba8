// What `lab up` creates for people to try things on: namespace `svc`, Deployment `web` (3 pod servers, spread
// over the nodes round-robin) and Service `web` (TCP 80 → the servers' HTTP on 8080, UDP 80 → their echo).
export const WORKLOAD_NAMESPACE = 'svc';
export const WEB = 'web';
export const WEB_REPLICAS = 3;
export const WEB_POD_PORT = 8080;
/** Short enough to wait for in a walkthrough, long enough to watch a terminating endpoint keep serving. */
export const WEB_GRACE_SECONDS = 10;

export function workloadNamespace(): object {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORKLOAD_NAMESPACE } };
}

/**
 * A Deployment of pod servers labelled app=NAME, each answering HTTP and UDP on 8080 (ports `http` and `echo`) and
 * terminating with the walkthrough's grace period: the lab's web pods, and the soak's.
 */
export function podServerDeployment(name: string, namespace: string, replicas: number): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: WEB_GRACE_SECONDS,
          containers: [
            {
              name: 'pod-server',
              image: 'kube-proxy-ts/pod-server',
              ports: [
                { name: 'http', containerPort: WEB_POD_PORT, protocol: 'TCP' },
                { name: 'echo', containerPort: WEB_POD_PORT, protocol: 'UDP' },
              ],
            },
          ],
        },
      },
    },
  };
}

export function webDeployment(): object {
  return podServerDeployment(WEB, WORKLOAD_NAMESPACE, WEB_REPLICAS);
}

export function webService(): object {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: WEB, namespace: WORKLOAD_NAMESPACE, labels: { app: WEB } },
    spec: {
      selector: { app: WEB },
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 'http' },
        { name: 'echo', protocol: 'UDP', port: 80, targetPort: 'echo' },
      ],
    },
  };
}
