// Where the change trackers report their counters. The model does no I/O: the caller (src/server/ metrics)
// supplies a sink; tests use recordingChangeMetrics() and assert on what was reported.

export interface ChangeMetrics {
  /** kubeproxy_sync_proxy_rules_service_changes_total += 1 */
  serviceChange(): void;
  /** kubeproxy_sync_proxy_rules_service_changes_pending = n */
  servicesPending(n: number): void;
  /** kubeproxy_sync_proxy_rules_endpoint_changes_total += 1 */
  endpointChange(): void;
  /** kubeproxy_sync_proxy_rules_endpoint_changes_pending = n */
  endpointsPending(n: number): void;
}

export const NO_CHANGE_METRICS: ChangeMetrics = Object.freeze({
  serviceChange: () => {},
  servicesPending: () => {},
  endpointChange: () => {},
  endpointsPending: () => {},
});

export interface RecordedChangeMetrics extends ChangeMetrics {
  readonly serviceChangesTotal: number;
  readonly serviceChangesPending: number;
  readonly endpointChangesTotal: number;
  readonly endpointChangesPending: number;
}

/** A ChangeMetrics that keeps the last values, for tests and for `lab status`. */
export function recordingChangeMetrics(): RecordedChangeMetrics {
  let serviceChangesTotal = 0;
  let serviceChangesPending = 0;
  let endpointChangesTotal = 0;
  let endpointChangesPending = 0;
  return {
    serviceChange: () => void serviceChangesTotal++,
    servicesPending: (n) => void (serviceChangesPending = n),
    endpointChange: () => void endpointChangesTotal++,
    endpointsPending: (n) => void (endpointChangesPending = n),
    get serviceChangesTotal() {
      return serviceChangesTotal;
    },
    get serviceChangesPending() {
      return serviceChangesPending;
    },
    get endpointChangesTotal() {
      return endpointChangesTotal;
    },
    get endpointChangesPending() {
      return endpointChangesPending;
    },
  };
}
