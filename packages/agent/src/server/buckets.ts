// Histogram bucket bounds, in seconds. Upstream's numbers (pkg/proxy/metrics/metrics.go) where upstream has the
// metric; our own choice, explained, for the two histograms beyond upstream. Dashboards compute quantiles from these
// bounds, so they must match upstream's exactly: change none of the upstream ones.

/** start, start×factor, … (count values). Doubling is exact in binary floating point, as in Go's helper. */
function exponential(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  let v = start;
  for (let i = 0; i < count; i++) {
    out.push(v);
    v *= factor;
  }
  return out;
}

function linear(start: number, width: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i * width);
}

/** Sync durations (overall, full, partial): 0.001 × 2ⁿ, 15 buckets, 1 ms … 16.384 s. */
export const SYNC_DURATION_BUCKETS: readonly number[] = Object.freeze(exponential(0.001, 2, 15));

/**
 * Network programming latency: a leading 0 (upstream merges its bucket lists into a slice that starts with one
 * zero element), 0.25, 0.5, 1–59 step 1, 60–115 step 5, 120–300 step 30: 81 bounds.
 */
export const NETWORK_PROGRAMMING_BUCKETS: readonly number[] = Object.freeze([
  0,
  ...linear(0.25, 0.25, 2),
  ...linear(1, 1, 59),
  ...linear(60, 5, 12),
  ...linear(120, 30, 7),
]);

/**
 * Conntrack reconciler pass: upstream's reference does not list its buckets; we use the sync-duration ones, since a
 * pass is of the same order as a sync (a netlink dump of the whole table plus deletions).
 */
export const CONNTRACK_RECONCILE_BUCKETS: readonly number[] = SYNC_DURATION_BUCKETS;

/**
 * Beyond upstream: one iptables-restore run. Same shape as the sync buckets (1 ms … 16.384 s) so that a restore can
 * be compared bucket for bucket with the sync that contained it.
 */
export const IPTABLES_RESTORE_BUCKETS: readonly number[] = SYNC_DURATION_BUCKETS;

/**
 * Beyond upstream: waiting for the xtables lock (`iptables-restore -w`). Usually zero, occasionally as long as
 * another agent's restore; upstream waits at most 5 s by default, so the bounds go from 0.1 ms to ~13 s, with an
 * explicit 0 so that "no wait at all" has its own bucket.
 */
export const IPTABLES_LOCK_WAIT_BUCKETS: readonly number[] = Object.freeze([
  0,
  ...exponential(0.0001, 2, 18),
]);
