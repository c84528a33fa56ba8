// What the soak creates in namespace `soak`, and which Services it sends traffic to.
//
//   soak-steady     4 pods (4–6 under churn): graceful churn only (scale, delete with grace, rollout restart),
//                   so its Services always have ready endpoints: no request to them may fail.
//   soak-flappy-K   3 pods each: readiness flips (Ready=False and back, as a failing probe writes it).
//   soak-anchor     2 pods, never churned: the long-lived connections that must survive proxy restarts.
//   soak-client     1 pod: where the in-cluster load runs (ClusterIP traffic from a pod).
//   Services soak-0 … soak-(N-1): even → soak-steady, odd → soak-flappy-(i/2 mod K); soak-0 and soak-1 are
//   NodePort. soak-anchor: NodePort. Every Service: TCP 80 → the pods' HTTP 8080, UDP 80 → their echo 8080.
import { podServerDeployment } from '../cluster/workload.js';

export const SOAK_NAMESPACE = 'soak';
export const STEADY = 'soak-steady';
export const ANCHOR = 'soak-anchor';
export const CLIENT = 'soak-client';
export const STEADY_REPLICAS = 4;
export const STEADY_MAX_REPLICAS = 6;
export const FLAPPY_REPLICAS = 3;
const ANCHOR_REPLICAS = 2;

/** How a Service's endpoints change during the soak. */
export type ChurnKind = 'graceful' | 'readiness' | 'none';

export interface SoakServicePlan {
  readonly name: string;
  readonly app: string;
  readonly churn: ChurnKind;
  readonly nodePort: boolean;
}

/**
 * The flappy Deployments: one per 25 Services, 1…8, so that a flip changes a bounded share of the Services and
 * the flips can reach tens a second (each Deployment takes one out, and back in half a second later).
 */
export function flappyCount(services: number): number {
  return Math.max(1, Math.min(8, Math.round(services / 25)));
}

export function flappyName(k: number): string {
  return `soak-flappy-${k}`;
}

export function servicePlan(services: number): SoakServicePlan[] {
  const k = flappyCount(services);
  const plans: SoakServicePlan[] = [];
  for (let i = 0; i < services; i++) {
    const steady = i % 2 === 0;
    plans.push({
      name: `soak-${i}`,
      app: steady ? STEADY : flappyName(Math.floor(i / 2) % k),
      churn: steady ? 'graceful' : 'readiness',
      nodePort: i < 2,
    });
  }
  plans.push({ name: ANCHOR, app: ANCHOR, churn: 'none', nodePort: true });
  return plans;
}

export function deployment(name: string, replicas: number): object {
  return podServerDeployment(name, SOAK_NAMESPACE, replicas);
}

export function service(plan: SoakServicePlan): object {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: plan.name, namespace: SOAK_NAMESPACE, labels: { soak: 'true' } },
    spec: {
      ...(plan.nodePort ? { type: 'NodePort' } : {}),
      selector: { app: plan.app },
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 'http' },
        { name: 'echo', protocol: 'UDP', port: 80, targetPort: 'echo' },
      ],
    },
  };
}

/** Every Deployment of a soak over `services` Services, with its replicas. */
export function deployments(services: number): { name: string; replicas: number }[] {
  return [
    { name: STEADY, replicas: STEADY_REPLICAS },
    ...Array.from({ length: flappyCount(services) }, (_, k) => ({
      name: flappyName(k),
      replicas: FLAPPY_REPLICAS,
    })),
    { name: ANCHOR, replicas: ANCHOR_REPLICAS },
    { name: CLIENT, replicas: 1 },
  ];
}
