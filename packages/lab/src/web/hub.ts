// The page's live feed: Server-Sent Events. A page that connects gets one `snapshot` (everything it draws: the
// cluster's objects, the last minutes of every node's samples and syncs, each node's last ruleset capture, the
// experiments and their runs), then only what changes, as it changes: `objects` (batched), `sample`, `sync`,
// `ruleset`, `run`. A page that falls behind (its socket's buffer past a bound) is cut off; EventSource reconnects
// by itself and starts over from a fresh snapshot, so a slow page never grows the lab's memory.
import type { ObjectSummary } from './cluster-view.js';
import type { NodeSample, SyncMark } from './sampler.js';
import type { RulesetCapture } from './ruleset.js';
import type { ActionRun, Experiment } from './actions.js';

export interface LabInfo {
  readonly prefix: string;
  readonly nodes: readonly { readonly name: string; readonly namespace: string }[];
  readonly startedAt: string;
  /** How much history the charts get (ms). */
  readonly windowMs: number;
}

export interface WebSnapshot {
  readonly lab: LabInfo;
  readonly objects: readonly ObjectSummary[];
  readonly samples: Readonly<Record<string, readonly NodeSample[]>>;
  readonly syncs: readonly SyncMark[];
  readonly rulesets: readonly RulesetCapture[];
  readonly experiments: readonly Experiment[];
  readonly runs: readonly ActionRun[];
}

export type WebEvent =
  | {
      readonly event: 'objects';
      readonly data: { upsert: readonly ObjectSummary[]; remove: readonly string[] };
    }
  | { readonly event: 'sample'; readonly data: { node: string; sample: NodeSample } }
  | { readonly event: 'sync'; readonly data: SyncMark }
  | { readonly event: 'ruleset'; readonly data: RulesetCapture }
  | { readonly event: 'run'; readonly data: ActionRun };

/** One SSE message. JSON never holds a raw newline, so `data:` is one line. */
export function sseMessage(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The last `windowMs` of samples and syncs per node. */
export class MetricsHistory {
  private readonly samples = new Map<string, NodeSample[]>();
  private syncs: SyncMark[] = [];

  constructor(private readonly windowMs: number) {}

  addSample(node: string, s: NodeSample): void {
    const list = this.samples.get(node) ?? [];
    list.push(s);
    while (list.length > 0 && (list[0]?.t ?? 0) < s.t - this.windowMs) list.shift();
    this.samples.set(node, list);
  }

  addSync(m: SyncMark): void {
    this.syncs.push(m);
    const cut = m.t - this.windowMs;
    if ((this.syncs[0]?.t ?? cut) < cut) this.syncs = this.syncs.filter((x) => x.t >= cut);
  }

  snapshot(): { samples: Record<string, NodeSample[]>; syncs: SyncMark[] } {
    return {
      samples: Object.fromEntries([...this.samples].map(([k, v]) => [k, [...v]])),
      syncs: [...this.syncs],
    };
  }
}

interface Client {
  write(chunk: string): boolean;
  buffered(): number;
  end(): void;
}

export class EventHub {
  private readonly clients = new Set<Client>();

  constructor(
    private readonly snapshot: () => WebSnapshot,
    private readonly maxBufferedBytes = 8 * 1024 * 1024,
    /** Called after a page got its snapshot (the server then brings what it skipped with no page open). */
    private readonly onAttach: () => void = () => undefined,
  ) {}

  get size(): number {
    return this.clients.size;
  }

  /** A new page: its snapshot first; returns the detach function. */
  attach(client: Client): () => void {
    this.clients.add(client);
    client.write(sseMessage('snapshot', this.snapshot()));
    this.onAttach();
    return () => this.clients.delete(client);
  }

  publish(e: WebEvent): void {
    if (this.clients.size === 0) return;
    const chunk = sseMessage(e.event, e.data);
    for (const c of [...this.clients]) {
      if (c.buffered() > this.maxBufferedBytes) {
        this.clients.delete(c);
        c.end();
        continue;
      }
      c.write(chunk);
    }
  }

  /** A comment line: keeps idle connections open through anything that times them out. */
  ping(): void {
    for (const c of this.clients) c.write(': ping\n\n');
  }

  close(): void {
    for (const c of this.clients) c.end();
    this.clients.clear();
  }
}
