// Times as Go's encoding/json prints a time.Time (RFC 3339 with nanoseconds, trailing fraction zeros dropped), in
// UTC. Our clock has millisecond resolution, so at most three fraction digits appear. A missing time prints as Go's
// zero time, as upstream's body does before any family has synced.

export const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

export function formatRFC3339Nano(epochMs: number | undefined): string {
  if (epochMs === undefined || !Number.isFinite(epochMs)) return GO_ZERO_TIME;
  const iso = new Date(epochMs).toISOString(); // 2026-01-02T03:04:05.670Z
  const [whole, fraction = ''] = iso.slice(0, -1).split('.');
  const trimmed = fraction.replace(/0+$/, '');
  return trimmed === '' ? `${whole}Z` : `${whole}.${trimmed}Z`;
}
