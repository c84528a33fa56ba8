// Placement of Pods, shared by the Deployment controller (which names the node when it creates a Pod) and the pod
// controller (which schedules Pods created without one): the nodes the scheduling filters allow, the preferred
// terms' best, and round robin among equals, so Pods without constraints spread across the nodes.
import type { JsonObject } from '../apiserver/json.js';
import type { ObjectStore } from '../apiserver/store.js';
import { placePod, snapshotOf, type Placement } from './scheduling.js';

export class NodePicker {
  private next = 0;
  constructor(private readonly store: ObjectStore) {}

  /** A node for `pod` (given Pods bound so far, this reconcile's included), or why there is none. */
  pick(pod: JsonObject): Placement {
    const placement = placePod(pod, snapshotOf(this.store), this.next);
    if (placement.node !== undefined) this.next++;
    return placement;
  }
}
