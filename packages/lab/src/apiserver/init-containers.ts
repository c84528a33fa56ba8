// Init containers as the API reads them. One with restartPolicy: Always is a restartable init container (KEP-753's
// sidecar): it starts in the init sequence but keeps running beside the app containers, so its ports, readiness and
// restarts count with theirs (upstream's podutil.IsRestartableInitContainer and the places that call it).
import { arr, child, isObject, str, type JsonObject } from './json.js';

export function isRestartableInitContainer(container: unknown): boolean {
  return isObject(container) && str(container, 'restartPolicy') === 'Always';
}

/** spec.initContainers of a Pod, in order. */
export function initContainersOf(pod: unknown): JsonObject[] {
  return arr(child(pod, 'spec'), 'initContainers').filter(isObject);
}

/** The names of a Pod's restartable (sidecar) init containers. */
export function sidecarNames(pod: unknown): Set<string> {
  return new Set(
    initContainersOf(pod)
      .filter(isRestartableInitContainer)
      .map((c) => str(c, 'name') ?? ''),
  );
}
