// The fixture of the agent e2e tests: a node namespace (loopback and an eth0 holding the node IP), a fake API
// server on the host's 127.0.0.1 that the test controls, the path between them (the lab's own Unix-socket bridge on the host and
// `kube-proxy-ts lab relay` in the namespace on 127.0.0.1:6443, src/lab/cluster/relay.ts), a kubeconfig for it, and a reference namespace where the expected rules are
// applied for comparison. close() removes all of it: proxy processes, relay, namespaces, socket, files.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNamespace, deleteNamespace, sweepNamespaces } from '../../../packages/netns/src/index.js';
import { hostCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { FakeApiServer } from '../../kube/helpers/fake-apiserver.js';
import type { FakeObject } from '../../kube/helpers/fake-apiserver.js';
import { runPrefix } from '../../helpers/kernel.js';
import type { NftablesLayoutName } from '../../../packages/agent/src/config/nftables-layout.js';
import { startSocketBridge } from '../../../packages/lab/src/cluster/relay.js';
import type { Pipe } from '../../../packages/lab/src/cluster/relay.js';
import { CLUSTER_CIDR, NODE_IP, NODE_NAME, PATHS, keyOf, manifestList, nodeObject } from './agent-objects.js';
import { AgentProcess, REPO_ROOT } from './agent-process.js';
import { expectedTable, inNs, listTable, withoutStaleChains } from './agent-table.js';
import type { CanonicalTable, RenderNode } from './agent-table.js';
import { until } from './agent-wait.js';
import { LAB_MAIN, SOURCE_FLAGS } from '../../helpers/cli.js';

const API_PORT = 6443;
const TOKEN = 'agent-e2e-token';

/** Flags every test passes: the conntrack zeros keep the proxy from writing host-global sysctls. */
export const CONNTRACK_FLAGS = [
  '--conntrack-max-per-core=0',
  '--conntrack-tcp-timeout-established=0',
  '--conntrack-tcp-timeout-close-wait=0',
] as const;

/**
 * A KubeProxyConfiguration file for the lab's node: its kubeconfig and node name, and a conntrack section that does
 * what CONNTRACK_FLAGS do (the limits are host-global outside a namespace), then `extra` lines.
 */
export function kubeProxyConfiguration(kubeconfig: string, extra: readonly string[] = []): string {
  return [
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
    'kind: KubeProxyConfiguration',
    'clientConnection:',
    `  kubeconfig: ${kubeconfig}`,
    `hostnameOverride: ${NODE_NAME}`,
    'conntrack:',
    '  maxPerCore: 0',
    '  tcpEstablishedTimeout: 0s',
    '  tcpCloseWaitTimeout: 0s',
    ...extra,
    '',
  ].join('\n');
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
}

export class AgentLab {
  readonly node: string;
  readonly ref: string;
  readonly kubeconfig: string;
  private readonly processes: AgentProcess[] = [];
  private readonly objectsByPath = new Map<string, Map<string, FakeObject>>();
  private relay: ChildProcess | undefined;
  private bridge: Pipe | undefined;

  private constructor(
    readonly prefix: string,
    readonly dir: string,
    readonly api: FakeApiServer,
    /** --nftables-layout for flags() and the render; undefined: the flag is not passed (upstream's default). */
    readonly layout: NftablesLayoutName | undefined,
  ) {
    this.node = `${prefix}-node`;
    this.ref = `${prefix}-ref`;
    this.kubeconfig = join(dir, 'kubeconfig');
  }

  /** A lab for the length of `body`: started before it, closed after it, also when it fails. */
  static async with<T>(
    body: (lab: AgentLab) => Promise<T>,
    options: { withNode?: boolean; layout?: NftablesLayoutName } = {},
  ): Promise<T> {
    const lab = await AgentLab.start(options);
    try {
      return await body(lab);
    } finally {
      await lab.close();
    }
  }

  /** Builds everything; on any failure, removes what was made and rethrows. */
  static async start(options: { withNode?: boolean; layout?: NftablesLayoutName } = {}): Promise<AgentLab> {
    const prefix = runPrefix();
    const dir = join(tmpdir(), prefix);
    mkdirSync(dir, { recursive: true });
    const api = await FakeApiServer.start({ token: TOKEN });
    const lab = new AgentLab(prefix, dir, api, options.layout);
    try {
      await lab.setUp(options.withNode ?? true);
    } catch (e) {
      await lab.close();
      throw e;
    }
    return lab;
  }

  private async setUp(withNode: boolean): Promise<void> {
    await sweepNamespaces(hostCommandRunner, this.prefix);
    for (const ns of [this.node, this.ref]) await createNamespace(hostCommandRunner, ns);
    // The node's own address on a link, so that nodePortAddresses "primary" finds it as on a real node (a veth
    // pair with both ends inside: this kernel has no dummy links).
    for (const args of [
      ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0-peer'],
      ['addr', 'add', `${NODE_IP}/24`, 'dev', 'eth0'],
      ['link', 'set', 'eth0-peer', 'up'],
      ['link', 'set', 'eth0', 'up'],
    ]) {
      const r = await inNs(this.node, 'ip', args);
      if (r.code !== 0) throw new Error(`ip ${args.join(' ')} in ${this.node}: ${r.stderr}`);
    }
    const apiUrl = new URL(this.api.url);
    const socket = join(this.dir, 'api.sock');
    this.bridge = await startSocketBridge(socket, Number(apiUrl.port));
    await this.startRelay(socket);
    writeFileSync(
      this.kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: fake\n  cluster:\n    server: http://127.0.0.1:${API_PORT}`,
        'users:',
        `- name: kube-proxy\n  user:\n    token: ${TOKEN}`,
        'contexts:',
        '- name: fake\n  context:\n    cluster: fake\n    user: kube-proxy',
        'current-context: fake',
        '',
      ].join('\n'),
    );
    if (withNode) this.put(PATHS.nodes, nodeObject());
  }

  private async startRelay(socketPath: string): Promise<void> {
    const relay = spawn(
      'ip',
      [
        'netns',
        'exec',
        this.node,
        process.execPath,
        ...SOURCE_FLAGS,
        LAB_MAIN,
        'relay',
        '--listen',
        `127.0.0.1:${API_PORT}`,
        '--socket',
        socketPath,
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.relay = relay;
    let err = '';
    relay.stderr?.on('data', (b: Buffer) => (err += b.toString('utf8')));
    await until(
      () => {
        if (relay.exitCode !== null) throw new Error(`relay exited (${relay.exitCode}): ${err}`);
        return err.includes('relay: ');
      },
      'the relay in the node namespace',
      30_000,
      () => err,
    );
  }

  /** Starts kube-proxy-ts in the node namespace with `args` (plus JSON logging). */
  startProxy(args: readonly string[], env: Readonly<Record<string, string>> = {}): AgentProcess {
    const p = new AgentProcess(this.node, [...args, '--logging-format=json'], env);
    this.processes.push(p);
    return p;
  }

  /** The flags an operator would pass for this node, in nftables mode (and the lab's layout, if it has one). */
  flags(...extra: string[]): string[] {
    return [
      '--kubeconfig',
      this.kubeconfig,
      '--hostname-override',
      NODE_NAME,
      '--proxy-mode',
      'nftables',
      '--cluster-cidr',
      CLUSTER_CIDR,
      ...(this.layout !== undefined ? ['--nftables-layout', this.layout] : []),
      ...CONNTRACK_FLAGS,
      ...extra,
    ];
  }

  /** Writes a file under the run's directory and returns its path. */
  file(name: string, text: string): string {
    const path = join(this.dir, name);
    writeFileSync(path, text);
    return path;
  }

  /** GET from inside the node namespace (curl), e.g. http://127.0.0.1:10249/metrics. */
  async get(url: string): Promise<HttpAnswer> {
    const r = await inNs(this.node, 'curl', [
      '-s',
      '--max-time',
      '5',
      '-o',
      '-',
      '-w',
      '\n%{http_code}',
      url,
    ]);
    const cut = r.stdout.lastIndexOf('\n');
    return { status: Number(r.stdout.slice(cut + 1)) || 0, body: r.stdout.slice(0, Math.max(0, cut)) };
  }

  table(): Promise<CanonicalTable | undefined> {
    return listTable(this.node);
  }

  /**
   * What `kube-proxy-ts render` of `objects` gives (with the lab's --nftables-layout), applied to the reference
   * namespace and listed. `render` overrides its node flags (nodeIP undefined: render reads the Node object).
   */
  expected(objects: readonly FakeObject[], render: Partial<RenderNode> = {}): Promise<CanonicalTable> {
    return expectedTable(this.ref, manifestList(objects), join(this.dir, 'final.json'), {
      nodeName: NODE_NAME,
      nodeIP: NODE_IP,
      clusterCIDR: CLUSTER_CIDR,
      ...(this.layout !== undefined ? { layout: this.layout } : {}),
      ...render,
    });
  }

  /**
   * Waits until the node's table equals the render of `objects` (stale chains awaiting their delayed delete
   * aside), then asserts it, so that a timeout fails with the difference.
   */
  async expectRules(
    proxy: AgentProcess,
    timeoutMs = 30_000,
    render: Partial<RenderNode> = {},
  ): Promise<void> {
    const want = await this.expected(this.state(), render);
    let got: CanonicalTable | undefined;
    const same = (): boolean => {
      try {
        assert.deepEqual(got && withoutStaleChains(got, want), want);
        return true;
      } catch {
        return false;
      }
    };
    try {
      await until(
        async () => {
          if (!proxy.running) throw new Error(`proxy exited: ${JSON.stringify(proxy.exit)}\n${proxy.tail()}`);
          got = await this.table();
          return same();
        },
        'the kernel rules to equal the render of the final objects',
        timeoutMs,
      );
    } catch (e) {
      if (got === undefined || !proxy.running) throw e;
    }
    assert.deepEqual(
      got && withoutStaleChains(got, want),
      want,
      `kernel table differs from the render\n${proxy.tail(15)}`,
    );
  }

  /** Adds or replaces an object on the API server (one watch event), and remembers it as the final state. */
  put(path: string, obj: FakeObject): FakeObject {
    const coll = this.tracked(path);
    const key = keyOf(obj);
    const stamped = coll.has(key) ? this.api.update(path, obj) : this.api.add(path, obj);
    coll.set(key, obj);
    return stamped;
  }

  /** Creates or updates a Service and its EndpointSlice (webService's pair), the Service first. */
  putService(pair: { readonly service: FakeObject; readonly slice: FakeObject }): void {
    this.put(PATHS.services, pair.service);
    this.put(PATHS.endpointSlices, pair.slice);
  }

  /** Deletes an object on the API server (one watch event). */
  remove(path: string, obj: FakeObject): void {
    const key = keyOf(obj);
    this.api.remove(path, key);
    this.tracked(path).delete(key);
  }

  /**
   * Changes the state without any watch event (as a restored etcd would), through the fake's restart(): every
   * connection is dropped, resourceVersions start again from `newBaseRv`, and history is forgotten.
   */
  restartApi(
    newBaseRv: number,
    changes: { put?: [string, FakeObject][]; remove?: [string, FakeObject][] },
  ): void {
    this.api.restart(newBaseRv, (collections) => {
      for (const [path, obj] of changes.put ?? []) {
        const c = collections.get(path) ?? new Map<string, FakeObject>();
        collections.set(path, c);
        c.set(keyOf(obj), obj);
        this.tracked(path).set(keyOf(obj), obj);
      }
      for (const [path, obj] of changes.remove ?? []) {
        collections.get(path)?.delete(keyOf(obj));
        this.tracked(path).delete(keyOf(obj));
      }
    });
  }

  /**
   * Counts `obj` as part of the final state without sending it (for objects a test sends as raw watch lines): the
   * render then sees it too, and must skip it exactly as the proxy did.
   */
  track(path: string, obj: FakeObject): void {
    this.tracked(path).set(keyOf(obj), obj);
  }

  /** Every object the API server holds now, as the tests made it: "the final API state". */
  state(): FakeObject[] {
    return [...this.objectsByPath.values()].flatMap((c) => [...c.values()]);
  }

  private tracked(path: string): Map<string, FakeObject> {
    let c = this.objectsByPath.get(path);
    if (!c) this.objectsByPath.set(path, (c = new Map()));
    return c;
  }

  async close(): Promise<void> {
    const errors: unknown[] = [];
    const attempt = async (f: () => Promise<unknown> | unknown): Promise<void> => {
      try {
        await f();
      } catch (e) {
        errors.push(e);
      }
    };
    for (const p of this.processes) await attempt(() => p.kill('SIGKILL'));
    // For debugging a run: KPTS_E2E_LOG_DIR=/some/dir keeps each proxy's log there.
    const logDir = process.env.KPTS_E2E_LOG_DIR;
    if (logDir) {
      this.processes.forEach((p, i) => {
        void attempt(() => writeFileSync(join(logDir, `${this.prefix}-proxy${i}.log`), p.stderr));
      });
    }
    await attempt(() => {
      if (this.relay && this.relay.exitCode === null) this.relay.kill('SIGKILL');
    });
    for (const ns of [this.node, this.ref]) await attempt(() => deleteNamespace(hostCommandRunner, ns));
    await attempt(() => sweepNamespaces(hostCommandRunner, this.prefix));
    await attempt(() => this.bridge?.close());
    await attempt(() => this.api.close());
    await attempt(() => rmSync(this.dir, { recursive: true, force: true }));
    if (errors.length > 0) throw errors[0];
  }
}
