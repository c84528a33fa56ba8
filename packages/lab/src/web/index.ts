// The lab, seen: `startLabWeb` puts the web view's parts together for a running lab. The cluster view follows the
// API server's store; the sampler reads every proxy's /metrics each second; each sync it notices makes the ruleset
// tracker read that node's tables again; actions run kubectl and the CLI; the hub pushes all of it to the pages.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { ObjectStore } from '../apiserver/store.js';
import type { LabPaths } from '../cluster/layout.js';
import { EXPERIMENTS, LabActions } from './actions.js';
import { loadAssets } from './assets.js';
import { newWebToken } from './auth.js';
import { ClusterView } from './cluster-view.js';
import { EventHub, MetricsHistory, type WebSnapshot } from './hub.js';
import { startWebServer } from './http.js';
import { captureRuleset, RulesetTracker } from './ruleset.js';
import { MetricsSampler } from './sampler.js';

const AFTER_SYNC_MS = 3000;

export interface LabWebOptions {
  readonly store: ObjectStore;
  readonly runner: CommandRunner;
  readonly paths: LabPaths;
  readonly prefix: string;
  readonly nodes: readonly { readonly name: string; readonly namespace: string }[];
  readonly startedAt: string;
  /** Default: a new random token. */
  readonly token?: string;
  /** Default 0: a free port on 127.0.0.1. */
  readonly port?: number;
  /** How much chart history the page gets (default 5 minutes). */
  readonly windowMs?: number;
  readonly sampleIntervalMs?: number;
  /** How often every node's tables are read again without a sync (default 15 s). */
  readonly rulesetPollMs?: number;
  /** What a command on a node sees of it as a host (cluster/node-env.ts); default: nothing added. */
  readonly nodeEnv?: (node: string) => Readonly<Record<string, string>>;
}

export interface LabWeb {
  readonly url: string;
  readonly port: number;
  /** How many pages are connected now. */
  readonly pages: () => number;
  close(): Promise<void>;
}

export async function startLabWeb(o: LabWebOptions): Promise<LabWeb> {
  const windowMs = o.windowMs ?? 5 * 60_000;
  const history = new MetricsHistory(windowMs);
  // Nodes that synced while no page was open (or were never read): a page opening reads them.
  const unread = new Set<string>(o.nodes.map((n) => n.name));
  // The hub asks for a snapshot only when a page connects, after everything below exists.
  const hub: EventHub = new EventHub(
    () => snapshot(),
    undefined,
    () => {
      for (const node of unread) void rulesets.request(node, 'opened');
      unread.clear();
    },
  );
  let flushTimer: NodeJS.Timeout | undefined;
  const view = new ClusterView(o.store, () => {
    // A burst of writes (a scale, 1,000 Services) goes out as one message a quarter second later.
    flushTimer ??= setTimeout(() => {
      flushTimer = undefined;
      const changes = view.flush();
      if (changes) hub.publish({ event: 'objects', data: changes });
    }, 250);
  });
  const rulesets = new RulesetTracker(
    (node) => {
      const n = o.nodes.find((x) => x.name === node);
      if (!n) return Promise.reject(new Error(`no node ${node}`));
      return captureRuleset(o.runner, n.name, n.namespace, Date.now(), o.nodeEnv?.(n.name) ?? {});
    },
    (c) => hub.publish({ event: 'ruleset', data: c }),
  );
  const actions = new LabActions({
    runner: o.runner,
    kubeconfig: o.paths.kubeconfig,
    stateDir: o.paths.stateDir,
    nodeConfig: o.paths.nodeConfig(o.nodes[0]?.name ?? 'control-plane'),
    onRun: (run) => hub.publish({ event: 'run', data: run }),
  });
  function snapshot(): WebSnapshot {
    const h = history.snapshot();
    return {
      lab: { prefix: o.prefix, nodes: o.nodes, startedAt: o.startedAt, windowMs },
      objects: view.snapshot(),
      samples: h.samples,
      syncs: h.syncs,
      rulesets: rulesets.snapshot(),
      experiments: EXPERIMENTS,
      runs: actions.runs(),
    };
  }
  const sampler = new MetricsSampler({
    runner: o.runner,
    nodes: o.nodes,
    ...(o.sampleIntervalMs !== undefined ? { intervalMs: o.sampleIntervalMs } : {}),
    onSample: (node, sample) => {
      history.addSample(node, sample);
      hub.publish({ event: 'sample', data: { node, sample } });
    },
    onSync: (mark) => {
      history.addSync(mark);
      hub.publish({ event: 'sync', data: mark });
      // The tables are read only for a page to show: with none open, the next page to open reads them.
      if (hub.size === 0) return void unread.add(mark.node);
      void rulesets.request(mark.node, 'sync');
      // What the proxy does right after a sync (the other mode's leftovers, stale chains) shows a moment later.
      const timer = setTimeout(() => {
        afterSync.delete(timer);
        void rulesets.request(mark.node, 'after-sync');
      }, AFTER_SYNC_MS);
      afterSync.add(timer);
    },
  });
  const afterSync = new Set<NodeJS.Timeout>();
  // Changes made outside a sync (by hand: `nft delete element …`) show within this, while a page is open.
  const poll = setInterval(() => {
    if (hub.size > 0) for (const n of o.nodes) void rulesets.request(n.name, 'poll');
  }, o.rulesetPollMs ?? 15_000);
  const { indexHtml, assets } = loadAssets();
  let server;
  try {
    server = await startWebServer({
      token: o.token ?? newWebToken(),
      ...(o.port !== undefined ? { port: o.port } : {}),
      hub,
      assets,
      indexHtml,
      handlers: {
        run: (id) => actions.run(id),
        explain: (ns, name) => actions.explain(ns, name),
        trace: (from, to) => actions.trace(from, to),
      },
    });
  } catch (e) {
    clearInterval(poll);
    view.close();
    throw e;
  }
  sampler.start();
  const web = server;
  let closing: Promise<void> | undefined;
  return {
    url: web.url,
    port: web.port,
    pages: () => hub.size,
    close: () =>
      (closing ??= (async () => {
        await sampler.stop();
        clearInterval(poll);
        for (const t of afterSync) clearTimeout(t);
        if (flushTimer) clearTimeout(flushTimer);
        view.close();
        await rulesets.idle();
        await web.close();
      })()),
  };
}
