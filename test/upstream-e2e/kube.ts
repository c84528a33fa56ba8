// The client the ported tests use in place of client-go: real kubectl against the lab's API server, with JSON in
// and out, so each call is the one upstream makes (Create, Get, Update, Delete, List) and `kubectl exec` is
// upstream's RunHostCmd.
import { execFile, spawn } from 'node:child_process';

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A Kubernetes object as JSON: what kubectl prints with -o json. */
export type KubeObject = Record<string, unknown>;

/** One kubectl call may not hang a test: the longest (an affinity batch, 16 × 2 s connects) is well under this. */
const KUBECTL_TIMEOUT_MS = 120_000;

export class KubectlError extends Error {
  override readonly name = 'KubectlError';
  constructor(
    readonly args: readonly string[],
    readonly result: CommandResult,
  ) {
    super(`kubectl ${args.join(' ')} exited ${result.code}: ${result.stderr.trim() || result.stdout.trim()}`);
  }
}

export class Kube {
  constructor(private readonly kubeconfig: string) {}

  /** kubectl with `args`; never throws on a non-zero exit (the result says how it ended). */
  run(args: readonly string[], stdin?: string): Promise<CommandResult> {
    return new Promise((resolve) => {
      const child = execFile(
        'kubectl',
        [...args],
        {
          env: { ...process.env, KUBECONFIG: this.kubeconfig },
          timeout: KUBECTL_TIMEOUT_MS,
          maxBuffer: 32 * 1024 * 1024,
        },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          resolve({ code, stdout: String(stdout), stderr: String(stderr) });
        },
      );
      child.stdin?.on('error', () => undefined); // a command that reads no stdin may exit before the write lands
      child.stdin?.end(stdin ?? '');
    });
  }

  async mustRun(args: readonly string[], stdin?: string): Promise<string> {
    const r = await this.run(args, stdin);
    if (r.code !== 0) throw new KubectlError(args, r);
    return r.stdout;
  }

  async json(args: readonly string[], stdin?: string): Promise<KubeObject> {
    return JSON.parse(await this.mustRun([...args, '-o', 'json'], stdin)) as KubeObject;
  }

  /** Create(obj) in `namespace`: the object the API server stored. */
  create(namespace: string, obj: KubeObject): Promise<KubeObject> {
    return this.json(['-n', namespace, 'create', '-f', '-'], JSON.stringify(obj));
  }

  /** Update(obj): a replace with the object's resourceVersion, so a conflict is an error as upstream's is. */
  update(namespace: string, obj: KubeObject): Promise<KubeObject> {
    return this.json(['-n', namespace, 'replace', '-f', '-'], JSON.stringify(obj));
  }

  get(namespace: string, resource: string, name: string): Promise<KubeObject> {
    return this.json(['-n', namespace, 'get', resource, name]);
  }

  /** List: the items of `resource` in `namespace` (all namespaces, or cluster-scoped, with "") matching `selector`. */
  async list(namespace: string, resource: string, selector?: string): Promise<KubeObject[]> {
    const scope = namespace === '' ? ['--all-namespaces'] : ['-n', namespace];
    const args = ['get', resource, ...scope, ...(selector ? ['-l', selector] : [])];
    const list = await this.json(args);
    return Array.isArray(list.items) ? (list.items as KubeObject[]) : [];
  }

  /** Delete, waiting as kubectl does for the object to be gone (a pod's graceful termination included). */
  async delete(namespace: string, resource: string, name: string): Promise<void> {
    await this.mustRun(['-n', namespace, 'delete', resource, name, '--wait=true', '--timeout=5m']);
  }

  /**
   * watchtools.Until over a ListWatch: watches `path(resourceVersion)` (a watch=1 URL, streamed by `kubectl get
   * --raw`) from `resourceVersion`, feeding each event to `condition` until it returns true (→ true) or `timeoutMs`
   * passes (→ false). A watch the server ends is opened again from the last event seen, as the retry watcher does.
   */
  async watchUntil(
    path: (resourceVersion: string) => string,
    resourceVersion: string,
    timeoutMs: number,
    condition: (type: string, object: KubeObject) => boolean,
  ): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    let rv = resourceVersion;
    while (Date.now() < deadline) {
      const child = spawn('kubectl', ['get', '--raw', path(rv)], {
        env: { ...process.env, KUBECONFIG: this.kubeconfig },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const met = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
        let buffered = '';
        let done = false;
        child.stdout.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          let nl: number;
          while (!done && (nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (line === '') continue;
            const event = JSON.parse(line) as { type?: string; object?: KubeObject };
            const object = event.object ?? {};
            rv = fieldString(object, 'metadata', 'resourceVersion') || rv;
            if (condition(event.type ?? '', object)) {
              done = true;
              clearTimeout(timer);
              resolve(true);
            }
          }
        });
        child.on('close', () => {
          clearTimeout(timer);
          resolve(false);
        });
      });
      child.kill();
      if (met) return true;
      // The server ended the watch: open it again after a second, as the retry watcher backs off.
      if (Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    return false;
  }

  /** RunHostCmd: `sh -c cmd` in the pod's first container; the result carries stdout and the exit code. */
  exec(namespace: string, pod: string, cmd: string): Promise<CommandResult> {
    return this.run(['exec', '-n', namespace, pod, '--', '/bin/sh', '-c', cmd]);
  }
}

/** The value at `path` inside `v`, or undefined where a step is missing. */
export function field(v: unknown, ...path: (string | number)[]): unknown {
  let cur = v;
  for (const p of path) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string | number, unknown>)[p];
  }
  return cur;
}

export function fieldString(v: unknown, ...path: (string | number)[]): string {
  const x = field(v, ...path);
  return typeof x === 'string' ? x : '';
}

export function fieldArray(v: unknown, ...path: (string | number)[]): unknown[] {
  const x = field(v, ...path);
  return Array.isArray(x) ? x : [];
}
