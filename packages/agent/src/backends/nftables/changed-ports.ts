// Which service ports a partial sync has to look at, shared by both layouts' planners: for each changed Service,
// the ports it had (as the planner tracked them) and the ports it has now. Ports of unchanged Services cannot have
// changed, so when the snapshot's size adds up no changed Service gained a port and the map need not be scanned.
import type { ServicePort } from '../../model/service-port.js';

export interface ChangedPorts {
  /** Service name → the keys of its ports before this sync. */
  readonly oldKeys: ReadonlyMap<string, readonly string[]>;
  /** Service name → the keys of its ports in the snapshot. */
  readonly newKeys: ReadonlyMap<string, readonly string[]>;
}

export function changedPorts(
  changed: ReadonlySet<string>,
  portsByService: ReadonlyMap<string, readonly string[]>,
  trackedPorts: number,
  serviceMap: ReadonlyMap<string, ServicePort>,
): ChangedPorts {
  const oldKeys = new Map<string, string[]>();
  let oldCount = 0;
  let stillPresent = 0;
  for (const name of changed) {
    const keys = [...(portsByService.get(name) ?? [])];
    oldKeys.set(name, keys);
    oldCount += keys.length;
    for (const k of keys) if (serviceMap.has(k)) stillPresent++;
  }
  const newKeys = new Map<string, string[]>();
  if (serviceMap.size === trackedPorts - oldCount + stillPresent) {
    for (const [name, keys] of oldKeys)
      newKeys.set(
        name,
        keys.filter((k) => serviceMap.has(k)),
      );
  } else {
    for (const name of changed) newKeys.set(name, []);
    for (const [key, sp] of serviceMap)
      if (changed.has(sp.serviceName)) newKeys.get(sp.serviceName)?.push(key);
  }
  return { oldKeys, newKeys };
}
