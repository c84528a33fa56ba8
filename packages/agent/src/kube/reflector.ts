// A Reflector keeps a local copy of one resource (path + selectors) in step with the API server and tells its
// handlers what changed, in order: paginated list, then a watch from the list's resourceVersion, resumed from the
// last resourceVersion seen after a close or a network error, relisted after 410 Gone (the difference between the
// old store and the new list becomes add/update/delete events). It never gives up: every failure is retried with
// jittered exponential backoff until stop(). field-notes.md §4 says why this is ours and not the library's
// informer (which stops for good on most errors, has no watchdog, and lists unpaginated).
import type { Clock, TimerHandle } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { ApiError, readBody, statusError } from './api-client.js';
import type { ApiClient, ApiResponse } from './api-client.js';
import { DEFAULT_BACKOFF, exponentialBackoff } from './backoff.js';
import type { Backoff, BackoffConfig } from './backoff.js';
import type { ReflectorHealth } from './health.js';
import { parseListPage } from './list-page.js';
import { LineSplitter } from './ndjson.js';
import type { KubeObject } from './object-identity.js';
import { ReportOnce } from './report-once.js';
import { diffStores } from './store-diff.js';
import type { StoredObject } from './store-diff.js';
import { decodeWatchLine, isResourceVersionUnavailable } from './watch-event.js';
import type { WatchEvent } from './watch-event.js';
import { errorMessage } from '../util/error-message.js';

export interface ResourceSpec {
  /** Short name for logs and health, e.g. "services". */
  readonly name: string;
  /** Collection path, e.g. "/api/v1/services" or "/apis/discovery.k8s.io/v1/endpointslices". */
  readonly path: string;
  readonly namespaced: boolean;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
}

export interface ReflectorHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(old: T, obj: T): void;
  onDelete?(obj: T): void;
  /** Called once, after the events of the first complete list. */
  onSynced?(): void;
}

export interface ReflectorTiming {
  readonly backoff: BackoffConfig;
  /** A request with no bytes (no event, no bookmark) for this long is aborted and retried. The API server sends a
   * bookmark about every minute to watchers that allow them, so the default leaves room for two missed ones. */
  readonly watchdogMs: number;
  /** Watches ask the server to end after timeoutSeconds in [min, 2·min), like client-go (5–10 minutes). */
  readonly minWatchTimeoutSeconds: number;
  /** Every this often each stored object is redelivered as onUpdate(obj, obj) (configSyncPeriod); 0 = never. */
  readonly resyncPeriodMs: number;
  /** A watch that ends cleanly sooner than this with no event counts as a failure (no hot loop on a bad server). */
  readonly shortWatchMs: number;
}

export const DEFAULT_TIMING: ReflectorTiming = {
  backoff: DEFAULT_BACKOFF,
  watchdogMs: 150_000,
  minWatchTimeoutSeconds: 300,
  resyncPeriodMs: 0,
  shortWatchMs: 1_000,
};

export interface ReflectorLimits {
  /** `limit` of each list page (client-go's pager uses 500). */
  readonly pageSize: number;
  /** Longest watch line kept; longer ones are dropped as malformed without being buffered. */
  readonly maxLineBytes: number;
  /** Largest list page read; past it the page is abandoned and the next try asks for half as many items. */
  readonly maxPageBytes: number;
}

export const DEFAULT_LIMITS: ReflectorLimits = {
  pageSize: 500,
  maxLineBytes: 16 * 1024 * 1024,
  maxPageBytes: 256 * 1024 * 1024,
};

export interface ReflectorOptions<T> {
  readonly client: ApiClient;
  readonly resource: ResourceSpec;
  readonly handlers: ReflectorHandlers<T>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly timing?: Partial<ReflectorTiming>;
  readonly limits?: Partial<ReflectorLimits>;
  readonly random?: () => number;
  /**
   * What the store holds of each object, when its consumer keeps its own state and needs less than the whole
   * object afterwards: handlers always get the object as the server sent it; only an update's `old` and a
   * delete found by a relist get what was kept. The store is what a resync redelivers, so a resource with `keep`
   * is not resynced (a consumer that compares each event with its own state, as the change trackers do, gains
   * nothing from it).
   */
  readonly keep?: (obj: T) => T;
}

type Counters = { -readonly [K in keyof ReflectorHealth['counters']]: number };

const MIN_PAGE_SIZE = 1;

export class Reflector<T extends KubeObject> {
  private readonly timing: ReflectorTiming;
  private readonly limits: ReflectorLimits;
  private readonly log: Logger;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  private readonly reported = new ReportOnce();
  private readonly describe: string;

  private store = new Map<string, StoredObject<T>>();
  private rv = '';
  private synced = false;
  private markSynced: () => void = () => {};
  private readonly syncedPromise = new Promise<void>((resolve) => (this.markSynced = resolve));
  private pageSize: number;
  private running: Promise<void> | undefined;
  private stopped = false;
  private current: AbortController | undefined;
  private sleepTimer: { handle: TimerHandle; wake: () => void } | undefined;
  private resyncTimer: TimerHandle | undefined;

  private lastListAt: number | undefined;
  private lastWatchEventAt: number | undefined;
  private lastSuccessAt: number | undefined;
  private consecutiveFailures = 0;
  /** 410s in a row with no watch event between them. */
  private goneStreak = 0;
  private lastError: string | undefined;
  private readonly counters: Counters = {
    lists: 0,
    relistsAfterGone: 0,
    watches: 0,
    watchdogAborts: 0,
    skippedObjects: 0,
  };

  constructor(private readonly options: ReflectorOptions<T>) {
    this.timing = { ...DEFAULT_TIMING, ...options.timing };
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.random = options.random ?? Math.random;
    this.backoff = exponentialBackoff(this.timing.backoff, options.clock, this.random);
    this.pageSize = this.limits.pageSize;
    const { name, labelSelector, fieldSelector } = options.resource;
    const selectors = [
      labelSelector && `label ${labelSelector}`,
      fieldSelector && `field ${fieldSelector}`,
    ].filter(Boolean);
    this.describe = selectors.length ? `${name} (${selectors.join(', ')})` : name;
    this.log = options.logger.child({ resource: name });
  }

  /** Starts following the resource; idempotent. Handlers are called from here on until stop(). */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = this.loop();
    this.armResync();
  }

  /** Stops for good: aborts the open request, cancels timers, resolves once the loop has exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.abort(new ApiError('network', 'reflector stopped'));
    if (this.sleepTimer) {
      this.options.clock.clearTimeout(this.sleepTimer.handle);
      this.sleepTimer.wake();
    }
    if (this.resyncTimer) this.options.clock.clearTimeout(this.resyncTimer);
    await this.running;
  }

  /** Resolves once the first complete list has been delivered (or at once if it has been). */
  waitForSync(): Promise<void> {
    return this.syncedPromise;
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  get resourceVersion(): string {
    return this.rv;
  }

  /** The object stored under "namespace/name" (or "name" for cluster-scoped resources). */
  get(key: string): T | undefined {
    return this.store.get(key)?.object;
  }

  list(): T[] {
    return [...this.store.values()].map((s) => s.object);
  }

  health(): ReflectorHealth {
    return {
      resource: this.describe,
      synced: this.synced,
      resourceVersion: this.rv,
      objects: this.store.size,
      lastListAt: this.lastListAt,
      lastWatchEventAt: this.lastWatchEventAt,
      lastSuccessAt: this.lastSuccessAt,
      consecutiveFailures: this.consecutiveFailures,
      lastError: this.lastError,
      counters: { ...this.counters },
    };
  }

  private async loop(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      let phase: 'list' | 'watch' = 'list';
      try {
        if (needList) {
          await this.listAll();
          needList = false;
        }
        phase = 'watch';
        await this.watchOnce();
      } catch (caught) {
        if (this.stopped) break;
        const err = this.classify(caught);
        this.noteFailure(err);
        if (err.kind === 'gone') {
          // The resourceVersion we hold is too old for the server: only a fresh list can restore the store.
          needList = true;
          this.goneStreak += 1;
          this.counters.relistsAfterGone += 1;
          this.log.info('watch expired (410 Gone); relisting', { error: err.message });
          // Relist at once the first time; a server that keeps answering 410 (no event in between) gets the backoff.
          if (this.goneStreak === 1) continue;
        } else if (err.kind === 'watchdog') {
          this.counters.watchdogAborts += 1;
          this.log.warn('API server silent for too long; reconnecting', {
            error: err.message,
            resourceVersion: this.rv,
          });
          continue;
        } else if (err.kind === 'too-large') {
          // A page too big to hold: ask for fewer items per page from now on (the smaller size sticks).
          this.pageSize = Math.max(MIN_PAGE_SIZE, Math.floor(this.pageSize / 2));
        } else if (err.kind === 'stream-error') {
          // An ERROR event that is not 410: the stream's state is unknown, so start again from a list.
          needList = true;
        }
        const delayMs = Math.max(this.backoff.next(), err.retryAfterMs ?? 0);
        this.log.warn(phase === 'list' ? 'list failed; retrying' : 'watch failed; retrying', {
          error: err.message,
          consecutiveFailures: this.consecutiveFailures,
          retryInMs: Math.round(delayMs),
        });
        await this.sleep(delayMs);
      }
    }
  }

  private classify(caught: unknown): ApiError {
    // An abort's reason is the error we chose (watchdog, stop); the stream reports it as a generic AbortError.
    const reason: unknown = this.current?.signal.aborted ? this.current.signal.reason : caught;
    if (reason instanceof ApiError) return reason;
    return new ApiError('network', errorMessage(reason));
  }

  private noteFailure(err: ApiError): void {
    this.consecutiveFailures += 1;
    this.lastError = err.message;
  }

  private noteSuccess(): void {
    this.consecutiveFailures = 0;
    this.lastSuccessAt = this.options.clock.now();
  }

  private selectorQuery(): Record<string, string> {
    const { labelSelector, fieldSelector } = this.options.resource;
    return {
      ...(labelSelector ? { labelSelector } : {}),
      ...(fieldSelector ? { fieldSelector } : {}),
    };
  }

  /** Opens a request under the idle watchdog; `touch` must be called on every chunk read. */
  private async open(
    query: Record<string, string>,
  ): Promise<{ res: ApiResponse; touch: () => void; done: () => void }> {
    const clock = this.options.clock;
    const controller = new AbortController();
    this.current = controller;
    let lastActivity = clock.now();
    let timer: TimerHandle | undefined;
    const limit = this.timing.watchdogMs;
    // One timer per request, re-armed only when it fires early: cheaper than resetting it on every chunk.
    const check = (): void => {
      const idle = clock.now() - lastActivity;
      if (idle >= limit) {
        timer = undefined;
        controller.abort(new ApiError('watchdog', `no data from the API server for ${idle} ms`));
      } else timer = clock.setTimeout(check, limit - idle);
    };
    timer = clock.setTimeout(check, limit);
    const done = (): void => {
      if (timer) clock.clearTimeout(timer);
      timer = undefined;
    };
    try {
      const res = await this.options.client.get(this.options.resource.path, query, controller.signal);
      lastActivity = clock.now();
      return { res, touch: () => void (lastActivity = clock.now()), done };
    } catch (err) {
      done();
      throw err;
    }
  }

  /**
   * Lists every page, then makes the store the list (replace). What is held meanwhile is kept small: before the
   * first complete list each page's objects go to the handlers as the page arrives (nothing syncs on them before
   * onSynced), so only one page of whole objects is alive at a time; in a relist an object whose resourceVersion
   * the store already has is not held again (it makes no event). At 100,000 EndpointSlices as an API server
   * writes them (≈ 3.7 KB of JSON each), holding the whole list before the first event cost ≈ 700 MiB at once.
   */
  private async listAll(): Promise<void> {
    const streaming = !this.synced;
    // A first list into an empty store keeps no second map: each object goes into the store as it comes, and the
    // store can hold nothing the list lacks (at 100,000 objects: a map of as many entries, and a diff of the two).
    let items: Map<string, StoredObject<T>> | undefined =
      streaming && this.store.size === 0 ? undefined : new Map();
    let rv = '';
    let cont = '';
    let restarted = false;
    for (;;) {
      const query: Record<string, string> = { limit: String(this.pageSize), ...this.selectorQuery() };
      if (cont !== '') query.continue = cont;
      const { res, touch, done } = await this.open(query);
      try {
        if (res.status !== 200) {
          const err = await statusError(res, `list ${this.describe}`);
          if (err.status === 410 && cont !== '' && !restarted) {
            // The continue token expired between pages (etcd compacted): the pages so far are from an
            // old snapshot, so start the list again once before treating it as a failure.
            this.log.info('list continue token expired; restarting the list', { error: err.message });
            restarted = true;
            // The store now holds pages of the old snapshot: the list starts over into a map of its own, whose
            // difference from the store replace() delivers.
            items = new Map();
            cont = '';
            continue;
          }
          // A 410 here is not about our resourceVersion (lists are unversioned): plain failure, not "relist".
          throw err.kind === 'gone' ? new ApiError('status', err.message, err.status) : err;
        }
        const body = await readBody(res, this.limits.maxPageBytes, touch);
        const parsed = parseListPage<T>(body, this.options.resource.namespaced);
        if (!parsed.ok) throw new ApiError('decode', `list ${this.describe}: ${parsed.reason}`);
        for (const item of parsed.page.items) {
          if (item.ok) this.listed(items, item.id.key, item.object, item.id.resourceVersion, streaming);
          else this.skip(item.reason, item.hint, 'list');
        }
        rv = parsed.page.resourceVersion;
        cont = parsed.page.continueToken;
      } finally {
        done();
      }
      if (cont === '') break;
    }
    this.counters.lists += 1;
    this.lastListAt = this.options.clock.now();
    this.noteSuccess();
    this.replace(items, rv);
  }

  /**
   * One listed object into `items` (the store-to-be). Unchanged (the store has its resourceVersion): the stored
   * entry. Streaming: into the store as well, its add or update delivered now, so replace() finds only deletes.
   */
  private listed(
    items: Map<string, StoredObject<T>> | undefined,
    key: string,
    object: T,
    resourceVersion: string,
    streaming: boolean,
  ): void {
    const held = this.store.get(key);
    if (held?.resourceVersion === resourceVersion) return void items?.set(key, held);
    if (!streaming) return void items?.set(key, { object, resourceVersion });
    const stored = { object: this.options.keep?.(object) ?? object, resourceVersion };
    items?.set(key, stored);
    this.store.set(key, stored);
    const h = this.options.handlers;
    if (held) this.deliver('update', () => h.onUpdate?.(held.object, object));
    else this.deliver('add', () => h.onAdd?.(object));
  }

  /** Makes the store the list (`items`; undefined: listed() filled the store itself) and delivers the difference. */
  private replace(items: Map<string, StoredObject<T>> | undefined, rv: string): void {
    const changes = items === undefined ? [] : diffStores(this.store, items);
    const keep = this.options.keep;
    // The handlers below get the listed objects; the store keeps what `keep` says (an unchanged one, as it was).
    if (items !== undefined && keep)
      for (const [key, listed] of items) {
        const held = this.store.get(key);
        if (held === listed) continue;
        items.set(key, {
          object: held?.resourceVersion === listed.resourceVersion ? held.object : keep(listed.object),
          resourceVersion: listed.resourceVersion,
        });
      }
    if (items !== undefined) this.store = items;
    this.rv = rv;
    const objects = this.store.size;
    this.log.v(2, () => ({
      msg: 'listed',
      fields: { objects, changes: changes.length, resourceVersion: rv },
    }));
    const h = this.options.handlers;
    for (const c of changes) {
      if (c.type === 'add') this.deliver('add', () => h.onAdd?.(c.object));
      else if (c.type === 'update') this.deliver('update', () => h.onUpdate?.(c.old, c.object));
      else this.deliver('delete', () => h.onDelete?.(c.object));
    }
    if (!this.synced) {
      this.synced = true;
      this.markSynced();
      this.deliver('synced', () => h.onSynced?.());
    }
  }

  /** Returns the number of events (bookmarks included) the watch delivered before it ended cleanly. */
  private async watchOnce(): Promise<number> {
    const min = this.timing.minWatchTimeoutSeconds;
    const query: Record<string, string> = {
      watch: 'true',
      resourceVersion: this.rv,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(Math.floor(min * (1 + this.random()))),
      ...this.selectorQuery(),
    };
    const startedAt = this.options.clock.now();
    this.counters.watches += 1;
    const { res, touch, done } = await this.open(query);
    let delivered = 0;
    let opened = false;
    let endedGone = false;
    const openLong = (): boolean => this.options.clock.now() - startedAt >= this.timing.shortWatchMs;
    try {
      if (res.status !== 200) throw await statusError(res, `watch ${this.describe}`);
      opened = true;
      this.noteSuccess();
      const splitter = new LineSplitter(this.limits.maxLineBytes);
      const handleItems = (items: ReturnType<LineSplitter['push']>): void => {
        for (const item of items) {
          if (item.kind === 'overlong') {
            this.skip(
              `watch line longer than ${this.limits.maxLineBytes} bytes (${item.bytes} bytes)`,
              this.describe,
              'watch',
            );
            continue;
          }
          const decoded = decodeWatchLine<T>(item.text, this.options.resource.namespaced);
          if (!decoded.ok) {
            this.skip(decoded.reason, decoded.hint, 'watch');
            continue;
          }
          this.apply(decoded.event);
          delivered += 1;
        }
      };
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        touch();
        handleItems(splitter.push(chunk));
      }
      handleItems(splitter.end());
    } catch (err) {
      if (err instanceof ApiError && err.kind === 'gone') endedGone = true;
      // A stream that worked (it delivered events, or stayed open past shortWatchMs) and then broke (connection
      // reset, proxy or load balancer cut) is resumed at once, as client-go does when a watch's result channel
      // closes: only a failing watch *request* backs off. Our own aborts (watchdog, stop) and errors the stream
      // carried (ERROR events, a bad status) keep their meaning.
      if (
        err instanceof ApiError ||
        this.current?.signal.aborted ||
        !opened ||
        (delivered === 0 && !openLong())
      )
        throw err;
      this.log.v(2, () => ({
        msg: 'watch stream broke; resuming',
        fields: { error: errorMessage(err), resourceVersion: this.rv },
      }));
      return delivered;
    } finally {
      done();
      // A watch that opened and ended other than with 410 is progress: a 410 after it is a new incident (relisted
      // at once), not a server that answers 410 to every watch (which the streak backs off).
      if (opened && !endedGone) this.goneStreak = 0;
    }
    if (delivered === 0 && !openLong())
      throw new ApiError(
        'network',
        `watch ${this.describe} closed after less than ${this.timing.shortWatchMs} ms with no events`,
      );
    return delivered;
  }

  private apply(event: WatchEvent<T>): void {
    if (event.type === 'ERROR') {
      const { code, reason, message } = event.status;
      const text = `watch ${this.describe}: ERROR event ${code ?? ''} ${reason ?? ''}: ${message ?? ''}`;
      if (isResourceVersionUnavailable(event.status)) throw new ApiError('gone', text, code);
      throw new ApiError('stream-error', text, code);
    }
    this.lastWatchEventAt = this.options.clock.now();
    this.goneStreak = 0;
    this.noteSuccess();
    if (event.type === 'BOOKMARK') {
      this.rv = event.resourceVersion;
      return;
    }
    const { key, resourceVersion } = event.id;
    const before = this.store.get(key);
    this.rv = resourceVersion;
    const h = this.options.handlers;
    if (event.type === 'DELETED') {
      if (!before) {
        this.log.v(4, () => ({ msg: 'delete of an object not in the store', fields: { object: key } }));
        return;
      }
      this.store.delete(key);
      this.deliver('delete', () => h.onDelete?.(event.object));
      return;
    }
    this.store.set(key, { object: this.options.keep?.(event.object) ?? event.object, resourceVersion });
    if (before) this.deliver('update', () => h.onUpdate?.(before.object, event.object));
    else this.deliver('add', () => h.onAdd?.(event.object));
  }

  private deliver(what: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      // A handler bug must not stop the reflector (or skip the events after it).
      this.log.error('event handler failed', {
        event: what,
        error: errorMessage(err),
      });
    }
  }

  private skip(reason: string, hint: string, where: 'list' | 'watch'): void {
    this.counters.skippedObjects += 1;
    if (this.reported.first(`${where}\u0000${hint}\u0000${reason}`))
      this.log.warn('skipping malformed object', { reason, object: hint, from: where });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        this.sleepTimer = undefined;
        resolve();
      };
      this.sleepTimer = { handle: this.options.clock.setTimeout(wake, ms), wake };
    });
  }

  private armResync(): void {
    const period = this.timing.resyncPeriodMs;
    if (!(period > 0) || this.options.keep) return;
    this.resyncTimer = this.options.clock.setTimeout(() => {
      if (this.stopped) return;
      if (this.synced) {
        const h = this.options.handlers;
        for (const { object } of this.store.values())
          this.deliver('resync', () => h.onUpdate?.(object, object));
      }
      this.armResync();
    }, period);
  }
}
