// `kube-proxy-ts diff`: what this node's proxy would write to go from one cluster state to another. It is not a
// text diff of two renders: the real change trackers and backends run against their in-memory fakes (FakeNft,
// FakeIptables, FakeIpvs with FakeIpvsNode's tools), as the agent would on the node, so the answer is the very
// transaction (nftables), restore input (iptables) or set of kernel changes (ipvs: kube-ipvs0's addresses, ipset
// restore input, IPVS changes as ipvsadm lines, iptables-restore input) the agent would send: BEFORE is loaded and synced once (a backend's first sync is full), AFTER
// arrives as informer events, and the second, partial, sync is captured. Beside it, the size of a whole ruleset
// for AFTER (a fresh node's first sync), which is what a full sync would cost instead.
import type { EndpointSlice, Node, Service } from '../api/objects.js';
import { nodeTopology } from '../model/node-facts.js';
import { IptablesBackend } from '../backends/iptables/backend.js';
import { IpvsBackend } from '../backends/ipvs/backend.js';
import type { IpvsModeOptions } from '../backends/ipvs/backend.js';
import { FakeIpvsNode } from '../backends/ipvs/fake-node.js';
import { FakeIpvs } from '../netfilter/ipvs/fake.js';
import { RecordingIpvs } from '../netfilter/ipvs/recording.js';
import type { IptablesExtras } from '../backends/iptables/render.js';
import { NftablesBackend, nftFamilyOf } from '../backends/nftables/backend.js';
import { TABLE_NAME } from '../backends/nftables/naming.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import { deepEqual } from '../model/deep-equal.js';
import type { EndpointsMap } from '../model/endpoint-slice-cache.js';
import { EndpointsChangeTracker } from '../model/endpoints-change-tracker.js';
import type { FeatureGates } from '../model/feature-gates.js';
import type { IPFamily } from '../model/ip.js';
import type { ServicePortMap, SkippedObject } from '../model/service-change-tracker.js';
import { ServiceChangeTracker } from '../model/service-change-tracker.js';
import type { NodeTopology } from '../model/topology.js';
import type { CommandRunner } from '../netfilter/command.js';
import { FakeIptables } from '../netfilter/iptables/fake.js';
import { FakeNft } from '../netfilter/nft/fake.js';
import { serializeOperations } from '../netfilter/nft/serialize.js';
import type { NodeNetworkConfig, ProxyBackend, ProxySnapshot } from '../sync/backend.js';
import { FakeClock } from '../util/clock.js';

/** One side of the comparison: the objects a node's informers would hold. */
export interface ClusterState {
  readonly services: readonly Service[];
  readonly endpointSlices: readonly EndpointSlice[];
  /** This node's Node object in that state, if known: its zone label is the node's topology. */
  readonly node?: Node | undefined;
}

/** A backend to diff, with the node settings its mode uses (NodePort addresses differ by mode, for one). */
export type DiffTarget =
  | { readonly mode: 'nftables'; readonly node: NodeNetworkConfig }
  | { readonly mode: 'iptables'; readonly node: NodeNetworkConfig; readonly iptables: IptablesExtras }
  | { readonly mode: 'ipvs'; readonly node: NodeNetworkConfig; readonly ipvs: IpvsModeOptions };

export interface DiffInput {
  readonly before: ClusterState;
  readonly after: ClusterState;
  readonly family: IPFamily;
  readonly nodeName: string;
  /** In the order their results should come back. */
  readonly targets: readonly DiffTarget[];
  readonly featureGates?: FeatureGates;
}

export type ObjectKind = 'Service' | 'EndpointSlice';

/** How many informer events of each kind AFTER amounts to. */
export interface EventCounts {
  readonly added: number;
  readonly updated: number;
  readonly deleted: number;
}

export interface BackendDiff {
  readonly mode: ProxyMode;
  /**
   * Whether the agent would sync at all. It syncs when an event changes what a tracker holds (or the node's zone
   * changed); an edit the model ignores (a label, an annotation, another family's slice) triggers nothing.
   */
  readonly synced: boolean;
  /** Whether that sync was a full one: a new zone makes the proxier ask for one (upstream OnTopologyChange). */
  readonly full: boolean;
  /**
   * nftables: operations in the transaction; iptables: lines of the restore input; ipvs: kernel operations (set
   * entries, IPVS changes, kube-ipvs0 addresses; the iptables glue is not counted). 0 when nothing was sent.
   */
  readonly size: number;
  /** What was sent: `nft -f -` text, iptables-restore input, or ipvs mode's sections. Empty when nothing was sent. */
  readonly text: string;
  /** The same measure for the whole ruleset of AFTER: what a fresh node's first sync sends. */
  readonly total: number;
}

export interface DiffResult {
  readonly events: Readonly<Record<ObjectKind, EventCounts>>;
  readonly backends: readonly BackendDiff[];
  /** Objects the model did not use, in either state (the agent would log and skip them too). */
  readonly skipped: readonly SkippedObject[];
}

/**
 * The agent's clock between the two syncs. The change is taken to arrive long after the first sync, as it does
 * on a running node: iptables mode, in large clusters, scans for stale chains at most once per syncPeriod (30 s by
 * default), so a change that came sooner would hide the deletion of a removed Service's chains until a later sync.
 */
const TIME_BETWEEN_SYNCS_MS = 60_000;

/** Neither backend runs a command when it has an executor or a fake runner; this says so if that ever changes. */
const NO_COMMANDS: CommandRunner = {
  run: (cmd) => Promise.reject(new Error(`diff runs no commands (asked to run ${cmd})`)),
};

/** What a fake received since its mark. */
interface Sent {
  readonly text: string;
  /** Operations (nftables) or lines (iptables); undefined: take the sync result's count. */
  readonly size?: number;
}

/** A backend on its fake, and how to read what the fake received since a mark. */
interface FakeBackend {
  readonly backend: ProxyBackend;
  /** Marks what the fake has received so far; `sentSince` then returns what came after. */
  mark(): void;
  sentSince(): Sent;
}

function fakeBackend(
  target: DiffTarget,
  clock: FakeClock,
  featureGates: FeatureGates | undefined,
): FakeBackend {
  if (target.mode === 'nftables') {
    const fake = new FakeNft({ family: nftFamilyOf(target.node.family), table: TABLE_NAME });
    const backend = new NftablesBackend({
      node: target.node,
      commands: NO_COMMANDS,
      clock,
      executor: fake,
      ...(featureGates ? { featureGates } : {}),
    });
    let seen = 0;
    return {
      backend,
      mark: () => void (seen = fake.transactions.length),
      // Every transaction since the mark: a sync sends its stale-chain cleanup, when one is due, before the main
      // transaction, and the backend's result counts only the main one.
      sentSince: () => {
        const txs = fake.transactions.slice(seen);
        return {
          text: txs.map((tx) => serializeOperations(fake.ref, tx.operations)).join(''),
          size: txs.reduce((n, tx) => n + tx.size, 0),
        };
      },
    };
  }
  if (target.mode === 'ipvs') return fakeIpvsBackend(target, clock, featureGates);
  const fake = new FakeIptables({ clock });
  const backend = new IptablesBackend({
    node: target.node,
    commands: fake,
    clock,
    iptables: { ...target.iptables, variant: 'auto' },
    ...(featureGates ? { featureGates } : {}),
  });
  let seen = 0;
  return {
    backend,
    mark: () => void (seen = fake.restores.length),
    // The rules' restore is a sync's last; a full sync may first restore missing base chains and jumps, which are
    // not the ruleset (render prints them apart too) and are not in the result's line count.
    sentSince: () => ({ text: fake.restores.slice(seen).at(-1)?.input ?? '' }),
  };
}

/**
 * ipvs mode on its tools' fakes. What a sync sent is every tool's input since the mark, one section per tool in
 * the order render prints them; a tool that received nothing has no section. Its size is the sync's own count.
 */
function fakeIpvsBackend(
  target: Extract<DiffTarget, { mode: 'ipvs' }>,
  clock: FakeClock,
  featureGates: FeatureGates | undefined,
): FakeBackend {
  const tools = new FakeIpvsNode({ clock });
  const ipvs = new RecordingIpvs(new FakeIpvs());
  const backend = new IpvsBackend({
    node: target.node,
    commands: tools,
    clock,
    ipvs,
    ipvsOptions: target.ipvs,
    ...(featureGates ? { featureGates } : {}),
  });
  let seen = { batches: 0, ipset: 0, ipvs: 0, restores: 0 };
  const section = (title: string, lines: readonly string[]): string =>
    lines.length === 0 ? '' : `# ${title}\n${lines.map((l) => (l.endsWith('\n') ? l : l + '\n')).join('')}`;
  return {
    backend,
    mark: () =>
      void (seen = {
        batches: tools.ip.batches.length,
        ipset: tools.ipset.calls.length,
        ipvs: ipvs.lines.length,
        restores: tools.iptables.restores.length,
      }),
    sentSince: () => ({
      text: [
        section('kube-ipvs0 (ip -batch -)', tools.ip.batches.slice(seen.batches)),
        section(
          'ipsets (ipset restore)',
          tools.ipset.calls
            .slice(seen.ipset)
            .flatMap((c) => (c.args[0] === 'restore' && c.stdin !== undefined ? [c.stdin] : [])),
        ),
        section('IPVS virtual and real servers (ipvsadm)', ipvs.lines.slice(seen.ipvs)),
        section(
          'iptables (iptables-restore --noflush)',
          tools.iptables.restores.slice(seen.restores).map((r) => r.input),
        ),
      ].join(''),
    }),
  };
}

function keyOf(obj: { readonly metadata?: { readonly namespace?: string; readonly name?: string } }): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

/** Objects by namespace/name; a name given twice is the later object, as `kubectl apply` of the file would leave it. */
function byKey<T extends Service | EndpointSlice>(objects: readonly T[]): Map<string, T> {
  const out = new Map<string, T>();
  for (const o of objects) out.set(keyOf(o), o);
  return out;
}

/**
 * The informer events that turn `before` into `after`, keyed by namespace/name: an add for a new object, an update
 * for one that changed, a delete for one that is gone. `send` returns whether the event left something pending.
 */
function feedChanges<T extends Service | EndpointSlice>(
  before: readonly T[],
  after: readonly T[],
  send: (previous: T | undefined, current: T | undefined) => boolean,
): { counts: EventCounts; triggered: boolean } {
  const old = byKey(before);
  const now = byKey(after);
  let added = 0;
  let updated = 0;
  let deleted = 0;
  let triggered = false;
  for (const [key, cur] of now) {
    const prev = old.get(key);
    if (prev === undefined) added++;
    else if (deepEqual(prev, cur)) continue;
    else updated++;
    // `||` must not short-circuit the event itself.
    triggered = send(prev, cur) || triggered;
  }
  for (const [key, prev] of old) {
    if (now.has(key)) continue;
    deleted++;
    triggered = send(prev, undefined) || triggered;
  }
  return { counts: { added, updated, deleted }, triggered };
}

/**
 * Runs BEFORE → AFTER through the model and every target backend on its fake; see the file comment. Pure but for
 * the fakes' memory. Rejects with the backend's BackendSyncError if a fake refuses a sync (which the kernel would
 * then refuse too).
 */
export async function diffClusterStates(input: DiffInput): Promise<DiffResult> {
  const { family, nodeName, featureGates } = input;
  const clock = new FakeClock();
  const skipped = new Map<string, SkippedObject>();
  const onSkip = (s: SkippedObject): void => void skipped.set(`${s.kind}\u0000${s.name}\u0000${s.reason}`, s);
  const services = new ServiceChangeTracker({ family, onSkip });
  const endpoints = new EndpointsChangeTracker({
    family,
    nodeName,
    onSkip,
    now: () => clock.now(),
    ...(featureGates ? { featureGates } : {}),
  });
  const serviceMap: ServicePortMap = new Map();
  const endpointsMap: EndpointsMap = new Map();
  const checkout = (topology: NodeTopology): { snapshot: ProxySnapshot; changedServices: Set<string> } => {
    const s = services.checkout(serviceMap);
    const e = endpoints.checkout(endpointsMap);
    return {
      snapshot: { serviceMap, endpointsMap, topology },
      changedServices: new Set([...s.updatedServices, ...e.updatedServices]),
    };
  };

  const fakes = input.targets.map((t) => ({ target: t, ...fakeBackend(t, clock, featureGates) }));

  // BEFORE: the informers' initial lists, then the first sync, which every backend makes full.
  for (const svc of input.before.services) services.update(undefined, svc);
  for (const slice of input.before.endpointSlices) endpoints.endpointSliceUpdate(slice, false);
  const first = checkout(nodeTopology(nodeName, input.before.node));
  for (const f of fakes) await f.backend.sync(first.snapshot, { changedServices: first.changedServices });

  // AFTER, as events. The proxier asks for a sync when an event leaves a change pending, and for a full one when
  // the node's zone changed.
  const svcEvents = feedChanges(input.before.services, input.after.services, (prev, cur) =>
    services.update(prev, cur),
  );
  const sliceEvents = feedChanges(input.before.endpointSlices, input.after.endpointSlices, (prev, cur) =>
    cur !== undefined
      ? endpoints.endpointSliceUpdate(cur, false)
      : endpoints.endpointSliceUpdate(prev as EndpointSlice, true),
  );
  const topology = nodeTopology(nodeName, input.after.node);
  const zoneChanged = topology.zone !== first.snapshot.topology.zone;
  const synced = svcEvents.triggered || sliceEvents.triggered || zoneChanged;
  clock.advance(TIME_BETWEEN_SYNCS_MS);
  const second = checkout(topology);

  const backends: BackendDiff[] = [];
  for (const f of fakes) {
    let size = 0;
    let text = '';
    let full = false;
    if (synced) {
      if (zoneChanged) f.backend.requestFullSync();
      f.mark();
      const r = await f.backend.sync(second.snapshot, { changedServices: second.changedServices });
      const sent = f.sentSince();
      size = sent.size ?? r.operations;
      full = r.full;
      text = sent.text;
    }
    // The whole ruleset: a fresh backend's first sync of AFTER, on an empty fake.
    const fresh = fakeBackend(f.target, new FakeClock(), featureGates);
    const whole = await fresh.backend.sync(second.snapshot, { full: true, changedServices: new Set() });
    backends.push({ mode: f.target.mode, synced, full, size, text, total: whole.operations });
  }
  return {
    events: { Service: svcEvents.counts, EndpointSlice: sliceEvents.counts },
    backends,
    skipped: [...skipped.values()],
  };
}
