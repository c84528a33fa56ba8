// Helpers for the whole-system lab tests: real kubectl, commands inside lab namespaces, traffic tallies, metrics.
import { execFile } from 'node:child_process';
import { stringify } from 'yaml';
import { parsePodReply } from '../../packages/netns/src/pod-server.js';

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function run(
  cmd: string,
  args: readonly string[],
  env: Record<string, string> = {},
  stdin?: string,
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      [...args],
      { env: { ...process.env, ...env }, timeout: 60_000, maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    // A command that never reads stdin may exit before the write lands: its exit code tells the story.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(stdin ?? '');
  });
}

export async function mustRun(
  cmd: string,
  args: readonly string[],
  env: Record<string, string> = {},
  stdin?: string,
): Promise<string> {
  const r = await run(cmd, args, env, stdin);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

export function kubectlFor(kubeconfig: string) {
  const run = (args: readonly string[], stdin?: string): Promise<string> =>
    mustRun('kubectl', args, { KUBECONFIG: kubeconfig }, stdin);
  return {
    run,
    /** `kubectl create -f -` of the objects, as one YAML stream. */
    create: (objects: readonly object[]) =>
      run(['create', '-f', '-'], objects.map((o) => stringify(o)).join('---\n')),
    /** `sh -c` with KUBECONFIG set: for the walkthrough's pipelines, run exactly as written there. */
    sh: (script: string) => mustRun('sh', ['-c', script], { KUBECONFIG: kubeconfig }),
    json: async (args: readonly string[]): Promise<unknown> =>
      JSON.parse(await mustRun('kubectl', [...args, '-o', 'json'], { KUBECONFIG: kubeconfig })) as unknown,
  };
}

export function inNetns(ns: string, cmd: readonly string[]): Promise<string> {
  return mustRun('ip', ['netns', 'exec', ns, ...cmd]);
}

/** The HTTP status of kube-proxy's /healthz as seen from inside `ns` (the node's namespace). */
export function healthzStatus(ns: string): Promise<string> {
  return inNetns(ns, [
    'curl',
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    'http://127.0.0.1:10256/healthz',
  ]);
}

export interface Tally {
  /** Pod name → answers. */
  readonly pods: Map<string, number>;
  /** Client addresses the pods saw. */
  readonly clients: Set<string>;
  readonly failures: number;
}

/** `count` separate HTTP requests (new connection each) from inside `ns`; who answered, and what they saw. */
export async function httpTally(ns: string, url: string, count: number): Promise<Tally> {
  const script = `i=0; while [ $i -lt ${count} ]; do curl -s -m 2 "$0" || echo FAIL; i=$((i+1)); done`;
  const out = await inNetns(ns, ['sh', '-c', script, url]);
  const pods = new Map<string, number>();
  const clients = new Set<string>();
  let failures = 0;
  for (const line of out.split('\n')) {
    if (line.trim() === '') continue;
    const reply = parsePodReply(line);
    if (!reply) {
      failures++;
      continue;
    }
    pods.set(reply.pod, (pods.get(reply.pod) ?? 0) + 1);
    clients.add(reply.clientIP);
  }
  return { pods, clients, failures };
}

/** A pause for pacing and for measured windows; each caller says why its pause is not synchronisation. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a value (not undefined), or fails after `timeoutMs` saying what it waited for. */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs / 1000} s waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`,
      );
    await delay(everyMs); // the polling pace, not a wait
  }
}

export function sorted(xs: Iterable<string>): string[] {
  return [...xs].sort();
}

/** JSON read back from kubectl or the lab's API: is it an object (not null, not an array)? */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The value at `path` inside `v`, or undefined where any step is not an object. */
export function field(v: unknown, ...path: string[]): unknown {
  let cur = v;
  for (const p of path) cur = isRecord(cur) ? cur[p] : undefined;
  return cur;
}

/** A List's `items`, or none. */
export function items(list: unknown): unknown[] {
  const xs = field(list, 'items');
  return Array.isArray(xs) ? xs : [];
}

/** A Pod as the lab tests look at it, from `kubectl get pods -o json`. */
export interface PodView {
  readonly name: string;
  readonly node: string;
  readonly ip: string;
  readonly ready: boolean;
  readonly terminating: boolean;
}

/** A Pod (read back as JSON) whose Ready condition is True. */
export function podIsReady(pod: unknown): boolean {
  const conditions = field(pod, 'status', 'conditions');
  return (
    Array.isArray(conditions) &&
    conditions.some((c) => field(c, 'type') === 'Ready' && field(c, 'status') === 'True')
  );
}

export function podViews(list: unknown): PodView[] {
  return items(list).map((p) => ({
    name: String(field(p, 'metadata', 'name')),
    node: String(field(p, 'spec', 'nodeName') ?? ''),
    ip: String(field(p, 'status', 'podIP') ?? ''),
    ready: podIsReady(p),
    terminating: field(p, 'metadata', 'deletionTimestamp') !== undefined,
  }));
}

/**
 * Service `namespace/name` for the Pods labelled app=`app`: port 80, named http, to `targetPort` (a number or a
 * container port's name); `spec` adds fields to the spec (type, traffic policies).
 */
export function httpService(
  namespace: string,
  name: string,
  app: string,
  targetPort: number | string,
  spec: Record<string, unknown> = {},
): object {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { ...spec, selector: { app }, ports: [{ name: 'http', port: 80, targetPort }] },
  };
}
