// Round-robin placement of Pods across schedulable Nodes, shared by the Deployment controller (which names the
// node when it creates a Pod) and the pod controller (which schedules Pods created without one).
import { child, str } from '../apiserver/json.js';
import type { ObjectStore } from '../apiserver/store.js';
import { resourceByKind } from '../apiserver/resources.js';

export class NodePicker {
  private next = 0;
  constructor(private readonly store: ObjectStore) {}

  pick(): string | undefined {
    const nodes = this.store
      .list(resourceByKind('Node'))
      .filter((n) => child(n, 'spec').unschedulable !== true)
      .map((n) => str(child(n, 'metadata'), 'name') ?? '')
      .filter((n) => n !== '');
    if (nodes.length === 0) return undefined;
    const name = nodes[this.next % nodes.length];
    this.next++;
    return name;
  }
}
