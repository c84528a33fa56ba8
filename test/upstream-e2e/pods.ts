// Pods as upstream's e2epod makes them: NewAgnhostPod (one container "agnhost-container" of the agnhost image, args
// defaulting to `pause`, no grace period), CreateSync (create, then wait for Ready), CreateExecPodOrFail (a pod to
// `kubectl exec` from, generateName, wait for Running), DeletePodOrFail. The lab runs agnhost's subcommands itself.
import { fail, poll, POD_START_TIMEOUT_MS, POLL_MS } from './framework.js';
import { field, fieldArray, fieldString, type KubeObject } from './kube.js';
import type { UpstreamContext } from './registry-types.js';

/** imageutils.Agnhost, the tag of upstream's current e2e images. */
export const AGNHOST_IMAGE = 'registry.k8s.io/e2e-test-images/agnhost:2.53';

export interface ContainerPort {
  readonly containerPort: number;
  readonly name?: string;
  readonly protocol?: 'TCP' | 'UDP';
}

export function agnhostPod(
  name: { readonly name?: string; readonly generateName?: string },
  labels: Readonly<Record<string, string>>,
  ports: readonly ContainerPort[],
  args: readonly string[],
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...name, labels: { ...labels } },
    spec: {
      containers: [
        {
          name: 'agnhost-container',
          image: AGNHOST_IMAGE,
          args: args.length > 0 ? [...args] : ['pause'],
          ...(ports.length > 0 ? { ports: ports.map((p) => ({ ...p })) } : {}),
        },
      ],
      terminationGracePeriodSeconds: 0,
    },
  };
}

export function podIsReady(pod: unknown): boolean {
  return fieldArray(pod, 'status', 'conditions').some(
    (c) => field(c, 'type') === 'Ready' && field(c, 'status') === 'True',
  );
}

export function podIsRunning(pod: unknown): boolean {
  return fieldString(pod, 'status', 'phase') === 'Running';
}

/** Polls the pod until `condition` holds (e2epod.WaitForPodCondition); fails naming what it waited for. */
export async function waitForPod(
  ctx: UpstreamContext,
  name: string,
  what: string,
  condition: (pod: KubeObject) => boolean,
  timeoutMs = POD_START_TIMEOUT_MS,
): Promise<KubeObject> {
  let last: KubeObject | undefined;
  const ok = await poll(
    POLL_MS,
    timeoutMs,
    async () => {
      last = await ctx.kube.get(ctx.namespace, 'pod', name);
      return condition(last);
    },
    ctx.signal,
  );
  if (!ok || !last)
    fail(
      `pod ${ctx.namespace}/${name} did not become ${what} within ${timeoutMs / 1000} s: phase ${fieldString(last, 'status', 'phase') || 'unknown'}`,
    );
  return last;
}

/** createPodOrFail (service.go): an agnhost pod with these labels, ports and args, created and Ready. */
export async function createPodOrFail(
  ctx: UpstreamContext,
  name: string,
  labels: Readonly<Record<string, string>>,
  ports: readonly ContainerPort[],
  ...args: string[]
): Promise<KubeObject> {
  ctx.step(`Creating pod ${name} in namespace ${ctx.namespace}`);
  const pod = agnhostPod({ name }, labels, ports, args);
  // "a dummy environment variable to work around a docker issue", kept so the spec is upstream's.
  (field(pod, 'spec', 'containers', 0) as KubeObject).env = [{ name: 'FOO', value: ' ' }];
  await ctx.kube.create(ctx.namespace, pod);
  return waitForPod(ctx, name, 'ready', podIsReady);
}

/** e2epod.CreateExecPodOrFail: an agnhost `pause` pod named from `generateName`, Running. */
export async function createExecPodOrFail(ctx: UpstreamContext, generateName: string): Promise<string> {
  const created = await ctx.kube.create(ctx.namespace, agnhostPod({ generateName }, {}, [], []));
  const name = fieldString(created, 'metadata', 'name');
  await waitForPod(ctx, name, 'running', podIsRunning);
  return name;
}

/** e2epod.DeletePodOrFail: delete and wait until it is gone. */
export async function deletePodOrFail(ctx: UpstreamContext, name: string): Promise<void> {
  ctx.step(`Deleting pod ${name} in namespace ${ctx.namespace}`);
  await ctx.kube.delete(ctx.namespace, 'pod', name);
}
