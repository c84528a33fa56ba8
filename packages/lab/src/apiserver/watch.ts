// One watch stream: replays history after the requested resourceVersion (or the current objects as ADDED when
// none is given), then follows the store live. Delivery is synchronous from the store's commit, so a stream never
// skips or reorders events; a client that stops reading is cut off once its buffer passes a bound, and re-watches
// from the last version it saw.
import type { Clock, TimerHandle } from 'kube-proxy-ts/util/clock.js';
import { servedForm } from './events.js';
import type { JsonObject } from './json.js';
import { apiVersionOf, type ResourceType } from './resources.js';
import { selectsObject, type ObjectSelectors } from './selectors.js';
import { errors, statusObject } from './status.js';
import type { ObjectStore, StoreEvent, WatchEventType } from './store.js';

/** Where a watch writes: an HTTP response in the server, an array in unit tests. */
export interface WatchSink {
  /** Writes one serialized event line. */
  write(line: string): void;
  /** Bytes written but not yet taken by the client. */
  bufferedBytes(): number;
  /** Ends the stream cleanly (timeout, expired version). */
  end(): void;
  /** Cuts the stream (overflow). */
  destroy(): void;
}

export interface WatchRequest extends ObjectSelectors {
  readonly resource: ResourceType;
  /** undefined: all namespaces. */
  readonly namespace?: string;
  /** undefined, '' or '0': start with the current objects as ADDED events. */
  readonly resourceVersion?: string;
  readonly allowWatchBookmarks?: boolean;
  readonly timeoutSeconds?: number;
  /** Renders each event's object (e.g. as a Table); default: the object itself. */
  readonly render?: (obj: JsonObject, type: WatchEventType | 'BOOKMARK') => unknown;
  /** Cache key of `render`, so events are serialized once per format. */
  readonly format?: string;
}

export interface WatchOptions {
  readonly clock: Clock;
  readonly bookmarkIntervalMs: number;
  readonly maxBufferedBytes: number;
  readonly onClose?: () => void;
}

export interface ActiveWatch {
  stop(): void;
  readonly closed: boolean;
}

const serialized = new WeakMap<StoreEvent, Map<string, string>>();

function metaNamespace(obj: JsonObject): string {
  const m = obj.metadata;
  if (typeof m === 'object' && m !== null && !Array.isArray(m)) {
    const ns = (m as JsonObject).namespace;
    if (typeof ns === 'string') return ns;
  }
  return '';
}

export function parseResourceVersion(rv: string | undefined): number | undefined | 'invalid' {
  if (rv === undefined || rv === '' || rv === '0') return undefined;
  if (!/^\d+$/.test(rv)) return 'invalid';
  return Number(rv);
}

export function startWatch(
  store: ObjectStore,
  req: WatchRequest,
  sink: WatchSink,
  opts: WatchOptions,
): ActiveWatch {
  let closed = false;
  // Filled once the stream goes live (after the replay).
  const subscription: { off?: () => void } = {};
  let bookmarkTimer: TimerHandle | undefined;
  let timeoutTimer: TimerHandle | undefined;
  // One stored event is seen through every API that serves its resource (core/v1 and events.k8s.io/v1 Events):
  // selectors, rendering and the serialization cache all work on the object as this watch's API serves it.
  const format = `${apiVersionOf(req.resource)}:${req.format ?? 'json'}`;
  const served = (o: JsonObject): JsonObject => servedForm(req.resource, o);
  const render = (o: JsonObject, type: WatchEventType | 'BOOKMARK'): unknown =>
    req.render ? req.render(served(o), type) : served(o);

  const matches = (obj: JsonObject): boolean =>
    (req.namespace === undefined || metaNamespace(obj) === req.namespace) && selectsObject(req, served(obj));

  // What a filtered watcher sees: an object entering the selection is ADDED, leaving it is DELETED.
  const project = (ev: StoreEvent): WatchEventType | undefined => {
    if (ev.type === 'ADDED') return matches(ev.object) ? 'ADDED' : undefined;
    if (ev.type === 'DELETED') return matches(ev.object) ? 'DELETED' : undefined;
    const now = matches(ev.object);
    const before = ev.old ? matches(ev.old) : false;
    if (now && before) return 'MODIFIED';
    if (now) return 'ADDED';
    if (before) return 'DELETED';
    return undefined;
  };

  const close = (how: 'end' | 'destroy'): void => {
    if (closed) return;
    closed = true;
    subscription.off?.();
    if (bookmarkTimer) opts.clock.clearTimeout(bookmarkTimer);
    if (timeoutTimer) opts.clock.clearTimeout(timeoutTimer);
    if (how === 'end') sink.end();
    else sink.destroy();
    opts.onClose?.();
  };

  const send = (line: string): void => {
    if (closed) return;
    sink.write(line);
    if (sink.bufferedBytes() > opts.maxBufferedBytes) close('destroy');
  };

  const deliver = (ev: StoreEvent): void => {
    if (ev.resource.resource !== req.resource.resource) return;
    const type = project(ev);
    if (!type) return;
    const key = `${format}:${type}`;
    let cache = serialized.get(ev);
    if (!cache) {
      cache = new Map();
      serialized.set(ev, cache);
    }
    let line = cache.get(key);
    if (line === undefined) {
      line = `${JSON.stringify({ type, object: render(ev.object, type) })}\n`;
      cache.set(key, line);
    }
    send(line);
  };

  const rv = parseResourceVersion(req.resourceVersion);
  if (rv === 'invalid') {
    send(
      `${JSON.stringify({ type: 'ERROR', object: statusObject(errors.badRequest(`invalid resource version "${String(req.resourceVersion)}"`)) })}\n`,
    );
    close('end');
    return { stop: () => close('end'), closed: true };
  }
  if (rv === undefined) {
    for (const obj of store.list(req.resource, req.namespace)) {
      if (!matches(obj)) continue;
      send(`${JSON.stringify({ type: 'ADDED', object: render(obj, 'ADDED') })}\n`);
    }
  } else {
    const history = store.eventsSince(req.resource, rv);
    if (history === 'expired') {
      const status = statusObject(
        errors.gone(`too old resource version: ${rv} (${store.compactedResourceVersion + 1})`),
      );
      send(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      close('end');
      return { stop: () => close('end'), closed: true };
    }
    for (const ev of history) deliver(ev);
  }
  if (closed) return { stop: () => undefined, closed: true };
  subscription.off = store.subscribe(deliver);

  if (req.allowWatchBookmarks) {
    const bookmark = (): void => {
      if (closed) return;
      const obj = {
        kind: req.resource.names.kind,
        apiVersion: apiVersionOf(req.resource),
        metadata: { resourceVersion: String(store.resourceVersion) },
      };
      send(`${JSON.stringify({ type: 'BOOKMARK', object: obj })}\n`);
      bookmarkTimer = opts.clock.setTimeout(bookmark, opts.bookmarkIntervalMs);
    };
    bookmarkTimer = opts.clock.setTimeout(bookmark, opts.bookmarkIntervalMs);
  }
  if (req.timeoutSeconds !== undefined && req.timeoutSeconds > 0)
    timeoutTimer = opts.clock.setTimeout(() => close('end'), req.timeoutSeconds * 1000);

  return {
    stop: () => close('end'),
    get closed() {
      return closed;
    },
  };
}
