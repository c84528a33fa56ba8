// Services and EndpointSlices through the model's real change trackers, as the proxier drives them: live maps,
// checked out once per sync. Shared by the iptables and nftables backend tests and the kernel tests built on them.
import type { EndpointSlice, Service } from '../../packages/agent/src/api/objects.js';
import type { EndpointsMap } from '../../packages/agent/src/model/endpoint-slice-cache.js';
import { EndpointsChangeTracker } from '../../packages/agent/src/model/endpoints-change-tracker.js';
import type { ServicePortMap } from '../../packages/agent/src/model/service-change-tracker.js';
import { ServiceChangeTracker } from '../../packages/agent/src/model/service-change-tracker.js';
import type {
  BackendSyncResult,
  ProxyBackend,
  ProxySnapshot,
} from '../../packages/agent/src/sync/backend.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';

export class ModelCluster {
  readonly #services: ServiceChangeTracker;
  readonly #endpoints: EndpointsChangeTracker;
  readonly #current = new Map<string, Service>();
  readonly serviceMap: ServicePortMap = new Map();
  readonly endpointsMap: EndpointsMap = new Map();
  /** Objects the trackers skipped, as "kind name: reason". */
  readonly skipped: string[] = [];
  /** When slices are seen (the trackers' trigger-time fallback); never moves unless a test moves it. */
  readonly clock = new FakeClock();

  constructor(
    readonly family: 'IPv4' | 'IPv6',
    readonly nodeName: string,
  ) {
    const onSkip = (s: { kind: string; name: string; reason: string }): void =>
      void this.skipped.push(`${s.kind} ${s.name}: ${s.reason}`);
    this.#services = new ServiceChangeTracker({ family, onSkip });
    this.#endpoints = new EndpointsChangeTracker({ family, nodeName, onSkip, now: () => this.clock.now() });
  }

  upsertService(svc: Service): void {
    const key = `${svc.metadata.namespace ?? ''}/${svc.metadata.name ?? ''}`;
    this.#services.update(this.#current.get(key), svc);
    this.#current.set(key, svc);
  }

  /** Deletes the Service "ns/name"; a name never added is a mistake in the test, so it throws. */
  deleteService(key: string): void {
    const prev = this.#current.get(key);
    if (!prev) throw new Error(`no service ${key} to delete`);
    this.#services.update(prev, undefined);
    this.#current.delete(key);
  }

  upsertSlice(slice: EndpointSlice): void {
    this.#endpoints.endpointSliceUpdate(slice, false);
  }

  deleteSlice(slice: EndpointSlice): void {
    this.#endpoints.endpointSliceUpdate(slice, true);
  }

  /** Checks both trackers out, as one proxier sync does: the snapshot and the Services that changed. */
  checkout(): { snapshot: ProxySnapshot; changedServices: Set<string> } {
    const s = this.#services.checkout(this.serviceMap);
    const e = this.#endpoints.checkout(this.endpointsMap);
    return {
      snapshot: {
        serviceMap: this.serviceMap,
        endpointsMap: this.endpointsMap,
        topology: { nodeName: this.nodeName },
      },
      changedServices: new Set([...s.updatedServices, ...e.updatedServices]),
    };
  }

  /** One sync of `backend` with what changed since the last checkout. */
  async sync(backend: ProxyBackend, full = false): Promise<BackendSyncResult> {
    const { snapshot, changedServices } = this.checkout();
    return backend.sync(snapshot, { full, changedServices });
  }
}
