// Wiring shared by the reflector tests: a fake API server, an unauthenticated client for it (--master), a
// recorder, a logger whose records can be awaited, and fast timings (backoff in tens of ms, no short-watch rule).
import type { TestContext } from 'node:test';
import { createApiClient } from '../../../packages/agent/src/kube/api-client.js';
import type { ApiClient } from '../../../packages/agent/src/kube/api-client.js';
import { loadClientConfig } from '../../../packages/agent/src/kube/client-config.js';
import type { KubeObject } from '../../../packages/agent/src/kube/object-identity.js';
import { UNLIMITED } from '../../../packages/agent/src/kube/rate-limiter.js';
import { Reflector } from '../../../packages/agent/src/kube/reflector.js';
import type {
  ReflectorLimits,
  ReflectorTiming,
  ResourceSpec,
} from '../../../packages/agent/src/kube/reflector.js';
import { recordingLogger } from '../../../packages/agent/src/util/logger.js';
import type { LogRecord } from '../../../packages/agent/src/util/logger.js';
import { systemClock } from '../../../packages/agent/src/util/clock.js';
import { FakeApiServer } from './fake-apiserver.js';
import type { FakeApiServerOptions, FakeObject } from './fake-apiserver.js';
import { Recorder, Waiters } from './recorder.js';

export const FAST_TIMING: Partial<ReflectorTiming> = {
  backoff: { initialMs: 20, maxMs: 200, factor: 2, jitter: 0.5, resetAfterMs: 60_000 },
  watchdogMs: 10_000,
  shortWatchMs: 0,
};

/** A log whose records can be awaited, event-driven. */
export class WatchedLog {
  private readonly waiters = new Waiters();
  readonly records: LogRecord[];
  readonly logger;

  constructor() {
    const records: LogRecord[] = [];
    const push = records.push.bind(records);
    records.push = (...items: LogRecord[]): number => {
      const n = push(...items);
      this.waiters.notify();
      return n;
    };
    this.records = records;
    this.logger = recordingLogger(records);
  }

  matching(msg: string | RegExp): LogRecord[] {
    return this.records.filter((r) => (typeof msg === 'string' ? r.msg === msg : msg.test(r.msg)));
  }

  waitFor(
    check: (records: readonly LogRecord[]) => boolean,
    what: string,
    timeoutMs = 10_000,
  ): Promise<void> {
    return this.waiters.until(
      () => check(this.records),
      what,
      timeoutMs,
      () => JSON.stringify(this.records.map((r) => r.msg)),
    );
  }
}

export function clientFor(server: FakeApiServer): ApiClient {
  const loaded = loadClientConfig({ master: server.url });
  if (!loaded.ok) throw new Error(loaded.error.message);
  return createApiClient(loaded.config, { clock: systemClock, rateLimiter: UNLIMITED });
}

export interface Harness<T extends KubeObject> {
  readonly server: FakeApiServer;
  readonly reflector: Reflector<T>;
  readonly rec: Recorder<T>;
  readonly log: WatchedLog;
}

export async function harness<T extends KubeObject>(
  t: TestContext,
  resource: ResourceSpec,
  opts: {
    server?: FakeApiServerOptions;
    timing?: Partial<ReflectorTiming>;
    limits?: Partial<ReflectorLimits>;
    seed?: (server: FakeApiServer) => void | Promise<void>;
    keep?: (obj: T) => T;
  } = {},
): Promise<Harness<T>> {
  const server = await FakeApiServer.start(opts.server);
  await opts.seed?.(server);
  const rec = new Recorder<T>();
  const log = new WatchedLog();
  const reflector = new Reflector<T>({
    client: clientFor(server),
    resource,
    handlers: rec.handlers,
    clock: systemClock,
    logger: log.logger,
    timing: { ...FAST_TIMING, ...opts.timing },
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.keep ? { keep: opts.keep } : {}),
  });
  t.after(async () => {
    await reflector.stop();
    await server.close();
  });
  return { server, reflector, rec, log };
}

export function svc(name: string, extra: Record<string, unknown> = {}, namespace = 'default'): FakeObject {
  return {
    metadata: { name, namespace },
    spec: { clusterIP: '198.18.0.10', ports: [{ port: 80 }] },
    ...extra,
  };
}

/** "default/a 104": the recorder's way of naming a stored object. */
export function idOf(obj: FakeObject): string {
  return `${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name} ${obj.metadata.resourceVersion ?? '?'}`;
}
